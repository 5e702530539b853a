// The access log's redaction runs on every request's target: its time must grow with the
// target's length and no faster, whatever the target is built to do. Here, not in test/, so that
// no other test competes for the cores while it measures.
import assert from "node:assert/strict";
import { hash } from "node:crypto";
import { test } from "node:test";
import { loggedPath } from "../../src/logged-path.ts";
import { redactKeys } from "../../src/redaction.ts";

// As the gateway redacts: the request's own credential looked for, every run of 20 or more key
// characters hashed once and looked up, as auth recognises keys.
const digests = new Set([hash("sha256", "no-such-key-in-this-test-0000", "hex")]);
const credential = "test_6t3Vd0x2Yw8u1Xq9Zr4s7Ap5Bn0Cm2Dk";
const exchange = {
  redact: (text: string) => redactKeys(text, [credential], (run) => digests.has(hash("sha256", run, "hex"))),
};

/** Targets built against the redaction: each of exactly `bytes` characters. */
const HOSTILE: Readonly<Record<string, (bytes: number) => string>> = {
  "?key pieces": (bytes) => `/${"?key".repeat(bytes)}`.slice(0, bytes),
  "? then names": (bytes) => `/?${"?a".repeat(bytes)}`.slice(0, bytes),
  "&token= pieces": (bytes) => `/?${"&token=".repeat(bytes)}`.slice(0, bytes),
  "runs one unit short of a key": (bytes) => `/${`${"a".repeat(23)}/`.repeat(bytes)}`.slice(0, bytes),
  "escapes one unit short of a key": (bytes) => `/${`${"%41".repeat(23)}/`.repeat(bytes)}`.slice(0, bytes),
  "percent signs that escape nothing": (bytes) => `/${"%4".repeat(bytes)}`.slice(0, bytes),
  "digit runs hashed one by one": (bytes) => `/${`${"1".repeat(20)}/`.repeat(bytes)}`.slice(0, bytes),
  "\\u escapes one unit short of a key": (bytes) =>
    `/${`${"\\u0041".repeat(23)}/`.repeat(bytes)}`.slice(0, bytes),
  "pieces of the credential": (bytes) => `/${credential.slice(0, -1).repeat(bytes)}`.slice(0, bytes),
};
const SMALL = 16 * 1024;
const LARGE = 256 * 1024;
// A scan of a 16 KB target that takes longer than this is not linear: stop before measuring more.
const SMALL_BUDGET_MS = 1_000;

function timeMs(scan: () => void, calls: number): number {
  const started = performance.now();
  for (let call = 0; call < calls; call++) scan();
  return (performance.now() - started) / calls;
}

function median(values: number[]): number {
  values.sort((a, b) => a - b);
  return ((values[9] as number) + (values[10] as number)) / 2;
}

/**
 * Milliseconds per call at each size: the median of 20 runs, the sizes taking turns so that a
 * burst of the machine's other work weighs on both. Each run covers the same number of bytes.
 */
function measure(small: string, large: string): { smallMs: number; largeMs: number } {
  const smallRuns: number[] = [];
  const largeRuns: number[] = [];
  for (let run = 0; run < 20; run++) {
    smallRuns.push(timeMs(() => loggedPath(small, exchange), LARGE / SMALL));
    largeRuns.push(timeMs(() => loggedPath(large, exchange), 1));
  }
  return { smallMs: median(smallRuns), largeMs: median(largeRuns) };
}

test("redacting a 256 KB hostile target takes at most 32 times as long as a 16 KB one (linear is 16)", () => {
  const figures: string[] = [];
  for (const [shape, build] of Object.entries(HOSTILE)) {
    const small = build(SMALL);
    const large = build(LARGE);
    const first = performance.now();
    loggedPath(small, exchange);
    const firstMs = performance.now() - first;
    assert.ok(firstMs < SMALL_BUDGET_MS, `${shape}: one 16 KB target took ${firstMs.toFixed(0)} ms`);
    for (let warm = 0; warm < 5; warm++) {
      loggedPath(small, exchange);
      loggedPath(large, exchange);
    }
    // Other work on a shared machine only ever adds time: a scan that is linear shows it in one
    // of three tries, one that is not (x64 for quadratic) in none.
    let ratio = Number.POSITIVE_INFINITY;
    for (let attempt = 1; attempt <= 3 && ratio > 32; attempt++) {
      const { smallMs, largeMs } = measure(small, large);
      ratio = largeMs / smallMs;
      figures.push(
        `${shape}: ${smallMs.toFixed(3)} ms at 16 KB, ${largeMs.toFixed(3)} ms at 256 KB, x${ratio.toFixed(1)}${attempt > 1 ? ` (try ${attempt})` : ""}`,
      );
    }
    assert.ok(ratio <= 32, figures.join("\n"));
  }
  console.log(figures.join("\n"));
});

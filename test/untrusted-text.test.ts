import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { checkSync } from "recheck";
import * as untrustedText from "../src/untrusted-text.ts";
import { bearerCredential, loggedPath, redactKeyShaped } from "../src/untrusted-text.ts";

test("recheck judges every regex the gateway runs on untrusted text safe from catastrophic backtracking", () => {
  const judged: string[] = [];
  for (const [name, value] of Object.entries(untrustedText)) {
    if (!(value instanceof RegExp)) continue;
    const diagnostics = checkSync(value.source, value.flags);
    const verdict =
      diagnostics.status === "vulnerable"
        ? `${diagnostics.complexity.summary}, e.g. ${diagnostics.attack.pattern}`
        : diagnostics.status === "unknown"
          ? `unknown (${diagnostics.error.kind})`
          : diagnostics.complexity.summary;
    assert.equal(diagnostics.status, "safe", `${name} ${value}: ${verdict}`);
    judged.push(`${name}: ${verdict}`);
  }
  // The module holds them all: an empty list would mean they moved out of the test's sight.
  assert.ok(judged.length >= 20, judged.join("\n"));
  console.log(judged.join("\n"));
  // The judge itself: the regex that froze the gateway is found out.
  assert.equal(checkSync(CREDENTIAL_QUERY.source, CREDENTIAL_QUERY.flags).status, "vulnerable");
});

// The access log's redaction as it was written with regexes, kept as the reference the scans
// must agree with. Only ever run here, on short texts: CREDENTIAL_QUERY takes cubic time.
const CREDENTIAL_QUERY = /([?&][^=&]*(?:key|token|auth|secret|password|signature)[^=&]*=)[^&]*/gi;
const TOKEN_SHAPED = /(?:[A-Za-z0-9_.~+-]|%[0-9A-Fa-f]{2}){24,}/g;
function regexLoggedPath(url: string): string {
  let text = url;
  if (text.includes("?")) text = text.replace(CREDENTIAL_QUERY, "$1[redacted]");
  if (text.length >= 24) {
    text = text.replace(TOKEN_SHAPED, (run) => {
      const plain = run.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) =>
        String.fromCharCode(Number.parseInt(hex, 16)),
      );
      return /[A-Za-z]/.test(plain) ? "[redacted]" : run;
    });
  }
  return text.length > 256 ? `${text.slice(0, 256)}…` : text;
}

test("the access log redacts a request target exactly as the regexes it replaces did", () => {
  // The characters the two patterns care about, and a few that split runs.
  const unit = fc.constantFrom(
    ..."?&=%/;[ a1Ff4K-_.~+".split(""),
    "key",
    "KEY",
    "Token",
    "auth",
    "secret",
    "password",
    "signature",
    "%41",
    "%4",
    "%20",
    "%2G",
    "abcdefghij",
    "0123456789",
    "ſ", // long s: upper-cases to S, which an /i regex without u must not match
  );
  fc.assert(
    fc.property(fc.array(unit, { maxLength: 60 }), (pieces) => {
      const target = pieces.join("");
      assert.equal(loggedPath(target), regexLoggedPath(target));
    }),
    { numRuns: 20_000 },
  );
  for (const target of [
    "/v1/pets?api_key=abc&status=sold",
    "/v1/pets?status=sold&X-Auth-Token=abc?def&limit=1",
    "/v1/pets?a=b?token=c",
    "/v1/pets&api_key=abc?x=1",
    `/v1/pets/${"a".repeat(23)}`,
    `/v1/pets/%41${"a".repeat(22)}`,
    `/v1/pets?status=${"1".repeat(30)}`,
    `/v1/pets?status=${"%61".repeat(24)}`,
    `/v1/pets?${"x".repeat(300)}`,
  ]) {
    assert.equal(loggedPath(target), regexLoggedPath(target), target);
  }
});

test("a key in a message is redacted whole, and text without one is returned as it was", () => {
  const key = "test_6t3Vd0x2Yw8u1Xq9Zr4s7Ap5Bn0Cm2Dk";
  assert.equal(
    redactKeyShaped(`query parameter ${key} is not part of listPets`),
    "query parameter [redacted] is not part of listPets",
  );
  const plain = "query parameter colour is not part of listPets";
  assert.equal(redactKeyShaped(plain), plain);
});

test("a bearer key is read from Authorization exactly as the regex it replaces did", () => {
  const BEARER = /^bearer(?: +(.*))?$/i;
  const unit = fc.constantFrom(
    ..."bearerBEARER \t\u2028\u00a0ſxk_-".split(""),
    "bearer",
    "Bearer ",
    "  ",
    "key",
  );
  fc.assert(
    fc.property(fc.array(unit, { maxLength: 20 }), (pieces) => {
      const value = pieces.join("");
      const match = BEARER.exec(value);
      assert.equal(
        bearerCredential(value),
        match ? (match[1]?.trim() ?? "") : undefined,
        JSON.stringify(value),
      );
    }),
    { numRuns: 20_000 },
  );
  const spaces = `bearer${" ".repeat(16_000)}\u2028`;
  const started = performance.now();
  assert.equal(bearerCredential(spaces), undefined);
  assert.ok(performance.now() - started < 50);
});

/** Targets built against the redaction: each of exactly `bytes` characters. */
const HOSTILE: Readonly<Record<string, (bytes: number) => string>> = {
  "?key pieces": (bytes) => `/${"?key".repeat(bytes)}`.slice(0, bytes),
  "? then names": (bytes) => `/?${"?a".repeat(bytes)}`.slice(0, bytes),
  "&token= pieces": (bytes) => `/?${"&token=".repeat(bytes)}`.slice(0, bytes),
  "runs one unit short of a key": (bytes) => `/${`${"a".repeat(23)}/`.repeat(bytes)}`.slice(0, bytes),
  "escapes one unit short of a key": (bytes) => `/${`${"%41".repeat(23)}/`.repeat(bytes)}`.slice(0, bytes),
  "percent signs that escape nothing": (bytes) => `/${"%4".repeat(bytes)}`.slice(0, bytes),
};
const SMALL = 16 * 1024;
const LARGE = 256 * 1024;
// A scan of a 16 KB target that takes longer than this is not linear: stop before measuring more.
const SMALL_BUDGET_MS = 1_000;

/** Milliseconds per call, the median of 20 timed runs, each of `calls` calls. */
function medianMs(scan: () => void, calls: number): number {
  const runs: number[] = [];
  for (let run = 0; run < 20; run++) {
    const started = performance.now();
    for (let call = 0; call < calls; call++) scan();
    runs.push((performance.now() - started) / calls);
  }
  runs.sort((a, b) => a - b);
  return ((runs[9] as number) + (runs[10] as number)) / 2;
}

test("redacting a 256 KB hostile target takes at most 32 times as long as a 16 KB one (linear is 16)", () => {
  const figures: string[] = [];
  for (const [shape, build] of Object.entries(HOSTILE)) {
    const small = build(SMALL);
    const large = build(LARGE);
    const first = performance.now();
    loggedPath(small);
    const firstMs = performance.now() - first;
    assert.ok(firstMs < SMALL_BUDGET_MS, `${shape}: one 16 KB target took ${firstMs.toFixed(0)} ms`);
    for (let warm = 0; warm < 5; warm++) {
      loggedPath(small);
      loggedPath(large);
    }
    // Each timed run covers the same number of bytes at both sizes.
    const smallMs = medianMs(() => loggedPath(small), LARGE / SMALL);
    const largeMs = medianMs(() => loggedPath(large), 1);
    const ratio = largeMs / smallMs;
    figures.push(
      `${shape}: ${smallMs.toFixed(3)} ms at 16 KB, ${largeMs.toFixed(3)} ms at 256 KB, x${ratio.toFixed(1)}`,
    );
    assert.ok(ratio <= 32, figures.join("\n"));
  }
  console.log(figures.join("\n"));
});

// W3C Trace Context parsing (src/trace-context.ts): what a valid traceparent and tracestate are,
// and that no header a client can send makes the parser throw.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { keptTracestate, parseTraceparent, TRACESTATE_KEPT_CHARACTERS } from "../../src/trace-context.ts";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";
const VALID = `00-${TRACE}-${SPAN}-01`;
const PROPERTY_SCALE = Number(process.env.PROPERTY_SCALE ?? 0.1);
const runs = (full: number) => Math.max(1, Math.round(full * PROPERTY_SCALE));

describe("traceparent", () => {
  test("a version 00 traceparent gives its trace id, its parent span id and its flags", () => {
    assert.deepEqual(parseTraceparent(VALID), { traceId: TRACE, spanId: SPAN, flags: 1 });
    assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-00`), { traceId: TRACE, spanId: SPAN, flags: 0 });
  });

  test("a higher version is read as version 00 up to its flags, then the end or a dash", () => {
    assert.deepEqual(parseTraceparent(`01-${TRACE}-${SPAN}-01`), { traceId: TRACE, spanId: SPAN, flags: 1 });
    assert.deepEqual(parseTraceparent(`cc-${TRACE}-${SPAN}-01-what-the-future-holds`)?.traceId, TRACE);
    assert.equal(parseTraceparent(`cc-${TRACE}-${SPAN}-01x`), undefined);
  });

  const invalid: Record<string, string | string[] | undefined> = {
    missing: undefined,
    "two headers": [VALID, VALID],
    "two values joined": `${VALID}, ${VALID}`,
    "too short": VALID.slice(0, -1),
    "version 00 with more after it": `${VALID}-00`,
    "version ff": `ff-${TRACE}-${SPAN}-01`,
    "all-zero trace id": `00-${"0".repeat(32)}-${SPAN}-01`,
    "all-zero span id": `00-${TRACE}-${"0".repeat(16)}-01`,
    "upper-case hex": VALID.toUpperCase(),
    "bad hex in the trace id": `00-${TRACE.slice(0, -1)}g-${SPAN}-01`,
    "bad hex in the flags": `00-${TRACE}-${SPAN}-0x`,
    "bad version": `0g-${TRACE}-${SPAN}-01`,
    "a dash misplaced": `00-${TRACE}${SPAN.slice(0, 1)}-${SPAN.slice(1)}-01`,
    "an empty value": "",
  };
  for (const [name, value] of Object.entries(invalid)) {
    test(`is refused when ${name}`, () => assert.equal(parseTraceparent(value), undefined));
  }

  test("no string makes it throw, and what it accepts is lower-case hex with non-zero ids", () => {
    const hexish = fc.string({ unit: fc.constantFrom(..."0123456789abcdefABCDEF-xg \t,"), maxLength: 80 });
    fc.assert(
      fc.property(
        fc.oneof(hexish, fc.string({ maxLength: 80 }), fc.string({ unit: "binary", maxLength: 80 })),
        (value) => {
          const parsed = parseTraceparent(value);
          if (parsed === undefined) return;
          assert.match(parsed.traceId, /^[0-9a-f]{32}$/);
          assert.match(parsed.spanId, /^[0-9a-f]{16}$/);
          assert.notEqual(parsed.traceId, "0".repeat(32));
          assert.notEqual(parsed.spanId, "0".repeat(16));
        },
      ),
      { numRuns: runs(5000) },
    );
  });
});

describe("tracestate", () => {
  test("a valid one is kept unchanged, spaces and empty members included", () => {
    for (const value of [
      "rojo=00f067aa0ba902b7",
      "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7",
      "a@b=1,,c-d*/_=x y",
    ]) {
      assert.equal(keptTracestate(value), value);
    }
  });

  const invalid: Record<string, string> = {
    "a key in upper case": "Rojo=1",
    "a key starting with a digit": "1rojo=1",
    "no equals sign": "rojo",
    "an empty value": "rojo=",
    "a duplicate key": "rojo=1,rojo=2",
    "an equals sign in the value": "rojo=a=b",
    "a system id too long": "t@abcdefghijklmno=1",
    "more than 32 members": Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(","),
    "only commas": ",,",
  };
  for (const [name, value] of Object.entries(invalid)) {
    test(`is dropped with ${name}`, () => assert.equal(keptTracestate(value), undefined));
  }

  test("an oversized one loses its long members first, then members from the end", () => {
    const long = `big=${"x".repeat(200)}`;
    const small = Array.from({ length: 30 }, (_, i) => `k${i}=${"v".repeat(20)}`);
    const kept = keptTracestate([small[0], long, ...small.slice(1)].join(",")) as string;
    assert.ok(kept.length <= TRACESTATE_KEPT_CHARACTERS, `${kept.length}`);
    assert.ok(!kept.includes("big="));
    assert.ok(kept.startsWith(`${small[0]},${small[1]},`));
    assert.equal(kept, small.slice(0, kept.split(",").length).join(","));
  });

  test("no string makes it throw", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 600 }), (value) => {
        const kept = keptTracestate(value);
        if (kept !== undefined) assert.ok(kept.length <= Math.max(value.length, TRACESTATE_KEPT_CHARACTERS));
      }),
      { numRuns: runs(5000) },
    );
  });
});

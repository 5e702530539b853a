// The key a client sends, read from Authorization by a scan (policies/auth/bearer-credential.ts)
// that agrees with the regex it replaced, which was quadratic on a run of spaces.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { bearerCredential } from "../../../../policies/auth/bearer-credential.ts";

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

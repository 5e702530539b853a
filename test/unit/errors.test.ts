import assert from "node:assert/strict";
import { test } from "node:test";
import policies from "../../policies/index.ts";
import { catalogueOf, coreCatalogue, declareErrors } from "../../src/errors.ts";

test("a policy's error carries its declared status, its policy's reason and the default message", () => {
  const errors = declareErrors("quota", { QUOTA_EXCEEDED: { status: 429, message: "Too many calls" } });
  assert.deepEqual(errors.error("QUOTA_EXCEEDED", undefined, { "retry-after": "1" }), {
    code: "QUOTA_EXCEEDED",
    status: 429,
    reason: "quota",
    message: "Too many calls",
    headers: { "retry-after": "1" },
  });
  assert.equal(errors.error("QUOTA_EXCEEDED", "slow down").message, "slow down");
});

test("the catalogue holds the core's codes and every bundled policy's, each once", () => {
  const catalogue = catalogueOf(policies);
  for (const code of Object.keys(coreCatalogue)) assert.ok(code in catalogue, code);
  for (const policy of policies) {
    for (const [code, spec] of Object.entries(policy.errors?.codes ?? {})) {
      assert.deepEqual(catalogue[code], { ...spec, reason: policy.errors?.reason }, code);
    }
  }
  assert.equal(catalogue.MISSING_API_KEY?.reason, "auth");
  assert.equal(catalogue.OPERATION_SUNSET?.status, 410);
});

test("two policies may share a code only with the same meaning, and none may take a core code", () => {
  const invalid = { INVALID_PARAMETER: { status: 400, message: "A parameter is not valid" } };
  const same = [
    { name: "a", errors: declareErrors("validation", invalid) },
    { name: "b", errors: declareErrors("validation", invalid) },
  ];
  assert.equal(Object.keys(catalogueOf(same)).filter((code) => code === "INVALID_PARAMETER").length, 1);
  assert.throws(
    () => catalogueOf([...same, { name: "c", errors: declareErrors("limit", invalid) }]),
    /policy c declares error code INVALID_PARAMETER/,
  );
  assert.throws(
    () =>
      catalogueOf([
        { name: "d", errors: declareErrors("auth", { NOT_FOUND: { status: 404, message: "gone" } }) },
      ]),
    /policy d declares error code NOT_FOUND, which the core/,
  );
});

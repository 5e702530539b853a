import assert from "node:assert/strict";
import { test } from "node:test";
import { readLifecycle, undatedWarning } from "../../../../policies/lifecycle/facts.ts";
import { loadApiDescription } from "../../../../src/openapi.ts";
import { DEFAULT_OPENAPI_FILE } from "../../../../src/project-files.ts";
import { ConfigError } from "../../../../src/startup-errors.ts";
import { OWN_DOCUMENT } from "../../../support/openapi-documents.ts";

const real = loadApiDescription(DEFAULT_OPENAPI_FILE);
const own = loadApiDescription(OWN_DOCUMENT);

test("deprecated: true with no extension is a deprecation without dates, and start-up is told how to add them", () => {
  const { deprecations } = readLifecycle(own);
  const getPet = deprecations.get("getPet");
  assert.ok(getPet, "tracked although undated");
  assert.equal(getPet.since, undefined);
  assert.equal(getPet.sunset, undefined);
  const warning = undatedWarning(deprecations);
  assert.deepEqual(warning?.operations, ["getPet"]);
  assert.match(String(warning?.message), /getPet has no since \(no Deprecation header\) and no sunset/);
  assert.deepEqual(warning?.fixes, [
    '"policies": {"lifecycle":{"operations":{"getPet":{"since":"<RFC 3339 date-time>","sunset":"<RFC 3339 date-time>"}}}}',
  ]);
});

test("the config dates what the document does not, and says where each field came from", () => {
  const { deprecations } = readLifecycle(own, {
    getPet: { since: "2026-01-01T00:00:00Z", successor: { method: "get", path: "/pets" } },
  });
  const getPet = deprecations.get("getPet");
  assert.equal(getPet?.since, Date.parse("2026-01-01T00:00:00Z"));
  assert.equal(getPet?.successor?.operation.id, "listPets");
  assert.deepEqual(getPet?.sources, {
    since: "policies.lifecycle.operations.getPet.since",
    successor: "policies.lifecycle.operations.getPet.successor",
  });
  // Only the sunset is missing now: the line adds that one date.
  assert.deepEqual(undatedWarning(deprecations)?.fixes, [
    '"policies": {"lifecycle":{"operations":{"getPet":{"sunset":"<RFC 3339 date-time>"}}}}',
  ]);
  assert.equal(
    undatedWarning(readLifecycle(real).deprecations),
    undefined,
    "the project's document is dated",
  );
});

test("a field in both places, an operation that is not deprecated or unknown, since after sunset: refused", () => {
  assert.throws(
    () => readLifecycle(real, { getPet: { sunset: "2031-01-01T00:00:00Z" } }),
    (error: Error) =>
      error instanceof ConfigError &&
      error.message ===
        "invalid config: policies.lifecycle.operations.getPet.sunset: getPet's sunset is given by x-gateway-deprecation in the document too; give it in one place",
  );
  assert.throws(
    () => readLifecycle(real, { listPets: { since: "2026-01-01T00:00:00Z" } }),
    /policies\.lifecycle\.operations\.listPets: listPets is not deprecated: true in the document/,
  );
  assert.throws(() => readLifecycle(real, { getCat: {} }), /getCat is not an operationId of the description/);
  assert.throws(
    () => readLifecycle(own, { getPet: { since: "2031-01-01T00:00:00Z", sunset: "2030-01-01T00:00:00Z" } }),
    /^ConfigError: invalid config: policies\.lifecycle\.operations\.getPet\.since \(2031-01-01T00:00:00Z\) is later than its sunset/,
  );
});

// The limit policy's request phase, in memory (test/support/policy-harness.ts): a page size is
// defaulted and clamped to the bounds the document gives it, never refused for its range.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import limit from "../../../../policies/limit/index.ts";
import type { Operation, ParameterSpec } from "../../../../src/openapi.ts";
import { parsePrometheus, sampleValue } from "../../../support/metrics.ts";
import { OWN_DOCUMENT, writeDocumentFiles } from "../../../support/openapi-documents.ts";
import { policyHarness } from "../../../support/policy-harness.ts";

const gateway = policyHarness(limit, { parameters: ["listPets.limit"] });
const spec = gateway.api.operation("listPets")?.queryParameters.get("limit") as ParameterSpec;
const adjustments = async (adjustment: string) =>
  sampleValue(parsePrometheus(await gateway.registry.metrics()), "gateway_limit_adjustments_total", {
    operation: "listPets",
    parameter: "limit",
    adjustment,
  });

test("a limit above the maximum is clamped, told in a header and counted on the policy's own counter", async () => {
  const maximum = String(spec.maximum);
  const trial = await gateway.request({ path: `/v1/pets?limit=${Number(maximum) * 50}` });
  assert.equal(trial.forwarded?.url, `/pets?limit=${maximum}`);
  assert.equal(trial.respond({ status: 200, json: [] }).headers["x-limit-applied"], maximum);
  assert.equal(await adjustments("clamped_to_maximum"), 1);
});

test("a missing limit gets the document's default, below the minimum its minimum", async () => {
  const absent = await gateway.request({ path: "/v1/pets" });
  assert.equal(absent.forwarded?.url, `/pets?limit=${spec.numericDefault}`);
  assert.equal(absent.exchange.notes.limitAdjusted, "defaulted");
  const low = await gateway.request({ path: "/v1/pets?limit=0" });
  assert.equal(low.forwarded?.url, `/pets?limit=${spec.minimum}`);
  assert.equal(low.exchange.notes.limitRequested, "0");
});

test("a limit within the bounds goes to the backend as the client wrote it", async () => {
  const trial = await gateway.request({ path: "/v1/pets?limit=7&status=sold" });
  assert.equal(trial.forwarded?.url, "/pets?limit=7&status=sold");
  assert.equal(trial.exchange.queryChanged, false);
});

test("a limit that is no integer is refused with the catalogue's INVALID_PARAMETER, reason validation", async () => {
  const trial = await gateway.request({ path: "/v1/pets?limit=ten" });
  assert.deepEqual(trial.reply?.error, {
    code: "INVALID_PARAMETER",
    message: "limit must be an integer",
    status: 400,
  });
  assert.equal(trial.exchange.rejection?.reason, "validation");
  assert.equal(trial.reply?.headers["x-limit-applied"], undefined);
});

test("a parameter the document does not have, or that is not an integer, stops start-up", () => {
  assert.throws(() => policyHarness(limit, { parameters: ["listPets.size"] }), {
    message: "policies.limit.parameters: listPets.size is not a query parameter of the description",
  });
  assert.throws(() => policyHarness(limit, { parameters: ["listPets.status"] }), {
    message: "policies.limit.parameters: listPets.status is not an integer parameter",
  });
});

test("left unset, limit clamps each operation's page size, bounds read from the document", async () => {
  // A team's document whose list is not listPets, nor its page size limit: the name rule finds per_page.
  const document = JSON.parse(readFileSync(OWN_DOCUMENT, "utf8"));
  document.paths["/pets"].get.operationId = "findAnimals";
  document.paths["/pets"].get.parameters[0].name = "per_page";
  const openapi = join(writeDocumentFiles({ "openapi.json": document }), "openapi.json");
  const own = policyHarness(limit, {}, { openapi });
  const findAnimals = own.api.operation("findAnimals") as Operation;
  assert.equal(own.instance.forOperation(own.api.operation("createPet") as Operation), undefined);
  const trial = await own.request({ path: "/v1/pets?per_page=500" });
  assert.equal(trial.forwarded?.url, "/pets?per_page=100");
  assert.equal(trial.respond({ status: 200, json: [] }).headers["x-per_page-applied"], "100");
  const context = { api: own.api, environment: "production", now: Date.now };
  assert.deepEqual(limit.plan?.({}, context).operation?.(findAnimals)?.data, [
    { parameter: "per_page", minimum: 1, maximum: 100, default: 20 },
  ]);
});

// The response contract's judge on the backend's answers, in memory (test/support/policy-harness.ts):
// in report mode a broken answer passes and is logged and counted, in enforce mode the client gets
// 502 instead, and what keeps the contract passes untouched either way.
import assert from "node:assert/strict";
import { test } from "node:test";
import responseContract from "../../../../policies/response-contract/index.ts";
import { CONTRACT_VIOLATION_MSG } from "../../../../policies/response-contract/report.ts";
import { PET } from "../../../fixtures/contract-answer.ts";
import { parsePrometheus, sampleValue } from "../../../support/metrics.ts";
import { policyHarness } from "../../../support/policy-harness.ts";

const reporting = policyHarness(responseContract, { mode: "report" });
const enforcing = policyHarness(responseContract, { mode: "enforce" });
const NAMELESS = { id: 7, categoryId: 3 };

test("an answer that keeps the contract passes as the backend wrote it, in either mode", async () => {
  for (const gateway of [reporting, enforcing]) {
    const trial = await gateway.request({ path: "/v1/pets/7" });
    const body = JSON.stringify({ ...PET, id: 7 });
    const answer = trial.respond({ status: 200, headers: { "content-type": "application/json" }, body });
    assert.equal(answer.status, 200);
    assert.equal(answer.body, body);
    assert.equal(trial.exchange.notes.contractViolation, undefined);
  }
});

test("report: an answer breaking the schema reaches the client, and is logged and counted", async () => {
  const trial = await reporting.request({ path: "/v1/pets/7" });
  const answer = trial.respond({ status: 200, json: NAMELESS });
  assert.equal(answer.status, 200);
  assert.deepEqual(JSON.parse(answer.body), NAMELESS);
  assert.equal(trial.exchange.notes.contractViolation, "schema:required");
  const [line] = reporting.logs.messages(CONTRACT_VIOLATION_MSG);
  assert.equal(line?.operation, "getPet");
  assert.equal(line?.mode, "report");
  assert.equal(line?.action, "passed");
  assert.equal(line?.reqId, trial.exchange.requestId);
  assert.match(String(line?.message), /name/);
  const counted = sampleValue(
    parsePrometheus(await reporting.registry.metrics()),
    "gateway_contract_violations_total",
    {
      operation: "getPet",
      rule: "schema:required",
      mode: "report",
    },
  );
  assert.equal(counted, 1);
});

test("enforce: the same answer becomes 502 UPSTREAM_CONTRACT_VIOLATION, naming the rule, not the data", async () => {
  const trial = await enforcing.request({ path: "/v1/pets/7" });
  const answer = trial.respond({ status: 200, json: { ...NAMELESS, secretField: "s3cr3t" } });
  assert.equal(answer.status, 502);
  assert.equal(answer.error?.code, "UPSTREAM_CONTRACT_VIOLATION");
  assert.equal(
    answer.error?.message,
    "The backend's answer broke the interface contract (schema:required at /name)",
  );
  assert.doesNotMatch(answer.body, /s3cr3t/);
  assert.equal(enforcing.logs.messages(CONTRACT_VIOLATION_MSG).at(-1)?.action, "rejected");
});

test("a status the document does not declare for the operation breaks the contract", async () => {
  const trial = await enforcing.request({ path: "/v1/pets/7" });
  const answer = trial.respond({ status: 418, json: { teapot: true } });
  assert.equal(answer.status, 502);
  assert.match(answer.error?.message ?? "", /\(status at the answer\)/);
});

test("a backend failing or shedding load is an upstream fault, passed through even when enforcing", async () => {
  for (const status of [500, 503, 429]) {
    const trial = await enforcing.request({ path: "/v1/pets/7" });
    const answer = trial.respond({ status, headers: { "retry-after": "3" }, body: "busy" });
    assert.equal(answer.status, status);
    assert.equal(answer.headers["retry-after"], "3");
  }
});

test("a rule the document states is enforced: getPet answers the animal it was asked for", async () => {
  const trial = await enforcing.request({ path: "/v1/pets/7" });
  const answer = trial.respond({ status: 200, json: { ...PET, id: 8 } });
  assert.equal(answer.status, 502);
  assert.match(answer.error?.message ?? "", /identity/);
});

test("the mode is chosen per operation: off is not even buffered, an override wins over the default", async () => {
  const mixed = policyHarness(responseContract, {
    mode: "report",
    operations: { getPet: "enforce", listPets: "off" },
  });
  const listPets = mixed.api.operation("listPets");
  assert.ok(listPets);
  assert.equal(mixed.instance.forOperation(listPets), undefined);
  const enforced = (await mixed.request({ path: "/v1/pets/7" })).respond({ status: 200, json: NAMELESS });
  assert.equal(enforced.status, 502);
  const reported = (
    await mixed.request({
      method: "POST",
      path: "/v1/pets",
      headers: { "content-type": "application/json" },
      body: '{"name":"Rex","categoryId":3}',
    })
  ).respond({ status: 201, json: { name: "Rex" } });
  assert.equal(reported.status, 201);
});

test("an operationId the document lacks stops start-up, naming the field", () => {
  assert.throws(() => policyHarness(responseContract, { operations: { getCat: "enforce" } }), {
    message: "policies.responseContract.operations.getCat: getCat is not an operationId of the description",
  });
});

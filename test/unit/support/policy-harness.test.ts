// The policy harness runs a policy through the gateway's own request judge, and holds every policy
// it runs to two promises (test/support/policy-harness.ts): these probes break them, so the checks
// are known to bite.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { declareErrors } from "../../../src/errors.ts";
import { definePolicy, type OperationPolicy } from "../../../src/policy.ts";
import { minimalDocument, writeDocumentFiles } from "../../support/openapi-documents.ts";
import { policyHarness } from "../../support/policy-harness.ts";

const errors = declareErrors("probe", {
  probe_refused: { status: 400, message: "The probe refused the request" },
});

/** A policy whose request phase does what the test gives it; it declares `declared`. */
function probe(phases: OperationPolicy, declared: readonly string[] = []) {
  return definePolicy({
    name: "probe",
    optionsSchema: { type: "object", additionalProperties: false, properties: {} },
    errors,
    create: () => ({ responseHeaders: declared, forOperation: () => phases }),
  });
}

test("a header a policy adds without declaring it fails the test: on the exchange, in a reply phase, on a refusal", async () => {
  const undeclared = /policy probe added the response header x-probe without declaring it in responseHeaders/;
  const onExchange = policyHarness(
    probe({
      onRequest: (exchange) => {
        exchange.responseHeaders["x-probe"] = "1";
        return undefined;
      },
    }),
  );
  const trial = await onExchange.request({ path: "/v1/pets" });
  assert.throws(() => trial.respond({ status: 200, json: [] }), { message: undeclared });
  const onReply = policyHarness(
    probe({
      onReply: (_exchange, _status, headers) => {
        headers["x-probe"] = "1";
      },
    }),
  );
  const replied = await onReply.request({ path: "/v1/pets" });
  assert.throws(() => replied.respond({ status: 200, json: [] }), { message: undeclared });
  const onRefusal = policyHarness(
    probe({ onRequest: () => errors.error("probe_refused", undefined, { "x-probe": "1" }) }),
  );
  await assert.rejects(onRefusal.request({ path: "/v1/pets" }), { message: undeclared });
  // Declared, the same header passes; a header a browser reads for itself needs no declaration.
  const declared = policyHarness(
    probe(
      {
        onRequest: (exchange) => {
          exchange.responseHeaders["x-probe"] = "1";
          exchange.responseHeaders.vary = "Origin";
          return undefined;
        },
      },
      ["x-probe"],
    ),
  );
  const answer = (await declared.request({ path: "/v1/pets" })).respond({ status: 200, json: [] });
  assert.equal(answer.headers["x-probe"], "1");
});

test("a refusal whose body is not the document's Error object fails the test", async () => {
  // A team's document whose Error codes are upper case: the probe's code is not.
  const strict = minimalDocument({
    schemas: {
      Error: {
        type: "object",
        required: ["code", "message", "status"],
        properties: {
          code: { type: "string", pattern: "^[A-Z_]+$" },
          message: { type: "string" },
          status: { type: "integer" },
        },
      },
    },
  });
  const openapi = join(writeDocumentFiles({ "openapi.json": strict }), "openapi.json");
  const refusing = policyHarness(probe({ onRequest: () => errors.error("probe_refused") }), {}, { openapi });
  await assert.rejects(refusing.request({ path: "/v1/pets/1" }), {
    message: /the probe_refused body is not the interface's Error object/,
  });
  // The core's own refusals keep it.
  const routed = await refusing.request({ path: "/v1/cats" });
  assert.equal(routed.reply?.error?.code, "NOT_FOUND");
});

test("a policy that throws shows its own error, not the 500 a gateway would answer", async () => {
  const throwing = policyHarness(
    probe({
      onRequest: () => {
        throw new Error("probe bug");
      },
    }),
  );
  await assert.rejects(throwing.request({ path: "/v1/pets" }), { message: "probe bug" });
});

test("a request takes the gateway's own request judge: what production does to it, the harness does", async () => {
  const passing = policyHarness(probe({}));
  const trial = await passing.request({
    path: "/v1/pets",
    headers: { "x-request-id": "client-chosen-7", x_consumer: "mallory" },
  });
  // The client's own request id is kept and echoed, as the gateway keeps it.
  assert.equal(trial.exchange.requestId, "client-chosen-7");
  assert.equal(trial.respond({ status: 200, json: [] }).headers["x-request-id"], "client-chosen-7");
  // A name a backend folds onto X-Consumer, the gateway's own header, never reaches it.
  assert.equal(trial.forwarded?.headers.x_consumer, undefined);
});

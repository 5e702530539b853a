// Request validation's phases, in memory (test/support/policy-harness.ts): what is refused before
// the backend sees it, with which Error object, and that what passes is forwarded as it was sent.
import assert from "node:assert/strict";
import { test } from "node:test";
import requestValidation from "../../../../policies/request-validation/index.ts";
import { policyHarness } from "../../../support/policy-harness.ts";

const gateway = policyHarness(requestValidation);
const JSON_TYPE = { "content-type": "application/json" };

test("parameters the operation declares pass as they are; nothing is rewritten", async () => {
  const trial = await gateway.request({ path: "/v1/pets?limit=5&status=sold" });
  assert.equal(trial.reply, undefined);
  assert.equal(trial.forwarded?.url, "/pets?limit=5&status=sold");
});

test("a path parameter that is not an integer of its format is 400 INVALID_PARAMETER, naming it", async () => {
  for (const [petId, message] of [
    ["abc", "petId must be an integer"],
    ["-1x", "petId must be an integer"],
    ["9223372036854775808", "petId must be within the int64 range"],
  ] as const) {
    const trial = await gateway.request({ path: `/v1/pets/${petId}` });
    assert.equal(trial.reply?.status, 400, petId);
    assert.deepEqual(trial.reply?.error, { code: "INVALID_PARAMETER", message, status: 400 });
  }
});

test("a query value outside the schema is refused with the values it may take", async () => {
  const trial = await gateway.request({ path: "/v1/pets?status=lost" });
  assert.equal(trial.reply?.error?.code, "INVALID_PARAMETER");
  assert.equal(trial.reply?.error?.message, "status must be one of available, pending, sold");
});

test("a query parameter the operation does not declare is refused, or passed on when the option says pass", async () => {
  const refused = await gateway.request({ path: "/v1/pets?colour=red" });
  assert.equal(refused.reply?.status, 400);
  assert.equal(refused.reply?.error?.code, "UNKNOWN_PARAMETER");
  assert.match(refused.reply?.error?.message ?? "", /colour.* is not part of listPets/);
  const lenient = policyHarness(requestValidation, { unknownQueryParameters: "pass" });
  const passed = await lenient.request({ path: "/v1/pets?colour=red" });
  assert.equal(passed.reply, undefined);
  assert.equal(passed.forwarded?.url, "/pets?colour=red");
});

test("a body on an operation that takes none is 400 BODY_NOT_ALLOWED, before it is read", async () => {
  const trial = await gateway.request({ path: "/v1/pets", headers: JSON_TYPE, body: "{}" });
  assert.equal(trial.reply?.error?.code, "BODY_NOT_ALLOWED");
  // Not drained: the core closes the connection rather than read an unauthenticated upload.
  assert.equal(trial.reply?.headers.connection, "close");
});

test("a body of a media type the operation does not declare is 415, naming the one it does", async () => {
  const trial = await gateway.request({
    method: "POST",
    path: "/v1/pets",
    headers: { "content-type": "text/plain" },
    body: "name=Rex",
  });
  assert.equal(trial.reply?.status, 415);
  assert.deepEqual(trial.reply?.error, {
    code: "UNSUPPORTED_MEDIA_TYPE",
    message: "the request body must be sent as Content-Type: application/json",
    status: 415,
  });
});

test("a JSON media type with parameters is the declared one", async () => {
  const trial = await gateway.request({
    method: "POST",
    path: "/v1/pets",
    headers: { "content-type": "Application/JSON; charset=utf-8" },
    body: '{"name":"Rex","categoryId":1}',
  });
  assert.equal(trial.reply, undefined);
});

test("a body that is not JSON, or not UTF-8, is 400 MALFORMED_JSON", async () => {
  for (const body of ['{"name":', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d])]) {
    const trial = await gateway.request({ method: "POST", path: "/v1/pets", headers: JSON_TYPE, body });
    assert.equal(trial.reply?.status, 400);
    assert.equal(trial.reply?.error?.code, "MALFORMED_JSON");
  }
});

test("a body against the schema is 400 INVALID_BODY, saying where and why", async () => {
  for (const [body, message] of [
    ['{"name":"Rex"}', /categoryId/],
    ['{"name":"Rex","categoryId":"one"}', /categoryId/],
    ['{"name":"Rex","categoryId":1,"colour":"red"}', /colour/],
    ["", /the request body is required/],
  ] as const) {
    const trial = await gateway.request({ method: "POST", path: "/v1/pets", headers: JSON_TYPE, body });
    assert.equal(trial.reply?.status, 400, body);
    assert.equal(trial.reply?.error?.code, "INVALID_BODY", body);
    assert.match(trial.reply?.error?.message ?? "", message);
  }
});

test("a body nested deeper than maxJsonDepth is refused before its schema is asked", async () => {
  const shallow = policyHarness(requestValidation, { maxJsonDepth: 2 });
  const trial = await shallow.request({
    method: "POST",
    path: "/v1/pets",
    headers: JSON_TYPE,
    body: '{"name":"Rex","categoryId":1,"status":[[["sold"]]]}',
  });
  assert.equal(trial.reply?.status, 400);
  assert.equal(trial.reply?.error?.code, "INVALID_BODY");
  assert.match(trial.reply?.error?.message ?? "", /deep|nest/i);
});

test("a valid body goes to the backend as the bytes the client sent, never re-serialised", async () => {
  const body = '{ "name" : "Rex",\n  "categoryId": 1 }';
  const trial = await gateway.request({ method: "POST", path: "/v1/pets", headers: JSON_TYPE, body });
  assert.equal(trial.reply, undefined);
  assert.equal(trial.forwarded?.body?.toString("utf8"), body);
});

test("a body over the core's cap is 413 PAYLOAD_TOO_LARGE: the body phase never sees it", async () => {
  const capped = policyHarness(requestValidation, {}, { config: { server: { maxRequestBodyBytes: 64 } } });
  const trial = await capped.request({
    method: "POST",
    path: "/v1/pets",
    headers: JSON_TYPE,
    body: JSON.stringify({ name: "R".repeat(100), categoryId: 1 }),
  });
  assert.equal(trial.reply?.status, 413);
  assert.equal(trial.reply?.error?.code, "PAYLOAD_TOO_LARGE");
  assert.equal(trial.exchange.body, undefined);
  assert.equal(trial.reply?.headers.connection, "close");
});

test("bad options stop start-up with the field's path", () => {
  assert.throws(() => policyHarness(requestValidation, { maxJsonDepth: 0 }), {
    message: "invalid config: /policies/requestValidation/maxJsonDepth must be >= 1",
  });
});

// The lifecycle's phases, in memory (test/support/policy-harness.ts) on an injected clock: what a
// deprecated operation says on every answer, when it answers 410 instead, and how operations
// marked experimental or beta answer.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { DEPRECATED_CALL_MSG } from "../../../../policies/lifecycle/deprecation-report.ts";
import lifecycle from "../../../../policies/lifecycle/index.ts";
import { PROJECT_ROOT } from "../../../../src/project-files.ts";
import { policyHarness } from "../../../support/policy-harness.ts";

// getPet in the bundled document: deprecated since 2026-01-01, sunset 2030-12-05, successor GET /pets.
const SINCE = Date.parse("2026-01-01T00:00:00Z");
const SUNSET = Date.parse("2030-12-05T00:00:00Z");
const DOCS = "https://docs.example.com/migrate";
const NEXT_DOCUMENT = join(PROJECT_ROOT, "test/fixtures/openapi-next.json");

let now = Date.parse("2028-06-01T12:00:00Z");
const clock = { now: () => now };
const gateway = policyHarness(lifecycle, { documentationUrl: DOCS }, clock);

test("every answer of a deprecated operation carries Deprecation, Sunset and Link, errors included", async () => {
  for (const status of [200, 404]) {
    const trial = await gateway.request({ path: "/v1/pets/7", headers: { "user-agent": "shop/1.0" } });
    const answer = trial.respond({ status, json: {} });
    assert.equal(answer.headers.deprecation, `@${SINCE / 1000}`);
    assert.equal(answer.headers.sunset, "Thu, 05 Dec 2030 00:00:00 GMT");
    assert.equal(answer.headers.link, `</v1/pets>; rel="successor-version", <${DOCS}>; rel="deprecation"`);
  }
});

test("a backend's own Link is kept, the lifecycle's added after it", async () => {
  const trial = await gateway.request({ path: "/v1/pets/7" });
  const answer = trial.respond({
    status: 200,
    json: {},
    headers: { link: '</v1/pets/7/photo>; rel="related"' },
  });
  assert.match(
    answer.headers.link ?? "",
    /^<\/v1\/pets\/7\/photo>; rel="related", <\/v1\/pets>; rel="successor-version"/,
  );
});

test("an operation that is not deprecated carries none of the lifecycle's headers", async () => {
  const answer = (await gateway.request({ path: "/v1/pets" })).respond({ status: 200, json: [] });
  for (const name of gateway.responseHeaders) assert.equal(answer.headers[name], undefined, name);
});

test("each call to a deprecated operation is logged for the deprecation report, with its caller", async () => {
  const trial = await gateway.request({ path: "/v1/pets/7", headers: { "user-agent": "shop/2.0" } });
  const line = gateway.logs.messages(DEPRECATED_CALL_MSG).at(-1);
  assert.equal(line?.operation, "getPet");
  assert.equal(line?.consumer, "_anonymous");
  assert.equal(line?.userAgent, "shop/2.0");
  assert.equal(line?.outcome, "served");
  assert.equal(line?.reqId, trial.exchange.requestId);
});

test("each call to a deprecated operation notes the days left to its sunset, for its access line and span", async () => {
  // 2028-06-01T12:00Z to 2030-12-05T00:00Z is 916.5 days: a part of a day counts as one, as in the report.
  assert.equal((await gateway.request({ path: "/v1/pets/7" })).exchange.notes.daysToSunset, 917);
  assert.equal((await gateway.request({ path: "/v1/pets" })).exchange.notes.daysToSunset, undefined);
  const serving = policyHarness(lifecycle, { afterSunset: "serve" }, { now: () => SUNSET + 36 * 3_600_000 });
  assert.equal((await serving.request({ path: "/v1/pets/7" })).exchange.notes.daysToSunset, -1);
});

test("from the sunset on, the operation answers 410 OPERATION_SUNSET naming its successor", async () => {
  now = SUNSET - 1;
  const before = await gateway.request({ path: "/v1/pets/7" });
  assert.equal(before.reply, undefined);
  now = SUNSET;
  try {
    const trial = await gateway.request({ path: "/v1/pets/7" });
    assert.equal(trial.reply?.status, 410);
    assert.equal(trial.reply?.error?.code, "OPERATION_SUNSET");
    assert.match(
      trial.reply?.error?.message ?? "",
      /GET \/v1\/pets\/\{petId\} was removed on .*use GET \/v1\/pets/,
    );
    assert.equal(trial.reply?.headers.sunset, "Thu, 05 Dec 2030 00:00:00 GMT", "the 410 says when, too");
    assert.equal(gateway.logs.messages(DEPRECATED_CALL_MSG).at(-1)?.outcome, "sunset");
  } finally {
    now = Date.parse("2028-06-01T12:00:00Z");
  }
});

test("afterSunset serve keeps serving past the sunset, with the headers", async () => {
  const serving = policyHarness(lifecycle, { afterSunset: "serve" }, { now: () => SUNSET + 1 });
  const trial = await serving.request({ path: "/v1/pets/7" });
  assert.equal(trial.reply, undefined);
  assert.equal(trial.respond({ status: 200, json: {} }).headers.sunset, "Thu, 05 Dec 2030 00:00:00 GMT");
});

test("inside a brownout window the operation answers 410 OPERATION_BROWNOUT, with Retry-After at its end", async () => {
  const start = "2028-06-01T12:00:00Z";
  const end = "2028-06-01T13:00:00Z";
  let at = Date.parse(start) - 1;
  const brownout = policyHarness(
    lifecycle,
    { brownouts: [{ operation: "getPet", start, end }] },
    { now: () => at },
  );
  assert.equal((await brownout.request({ path: "/v1/pets/7" })).reply, undefined, "before the window");
  at = Date.parse(start);
  const trial = await brownout.request({ path: "/v1/pets/7" });
  assert.equal(trial.reply?.status, 410);
  assert.equal(trial.reply?.error?.code, "OPERATION_BROWNOUT");
  assert.equal(trial.reply?.headers["retry-after"], "Thu, 01 Jun 2028 13:00:00 GMT");
  // Declared, so that a page on another origin may read it (CORS exposes what is declared).
  assert.ok(brownout.responseHeaders.includes("retry-after"));
  at = Date.parse(end);
  assert.equal((await brownout.request({ path: "/v1/pets/7" })).reply, undefined, "the window has ended");
});

test("a brownout for an operation that is not deprecated stops start-up, naming the entry", () => {
  assert.throws(
    () =>
      policyHarness(lifecycle, {
        brownouts: [{ operation: "listPets", start: "2028-01-01T00:00:00Z", end: "2028-01-02T00:00:00Z" }],
      }),
    {
      message:
        "invalid config: policies.lifecycle.brownouts[0].operation: listPets is not a deprecated operation of the document",
    },
  );
});

test("operations marked beta or experimental say so; production refuses experimental ones with 403", async () => {
  const production = policyHarness(lifecycle, {}, { openapi: NEXT_DOCUMENT, environment: "production" });
  const beta = (await production.request({ path: "/v1/animals" })).respond({ status: 200, json: [] });
  assert.equal(beta.headers["x-api-stability"], "beta");
  const refused = await production.request({
    method: "POST",
    path: "/v1/animals",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  assert.equal(refused.reply?.status, 403);
  assert.equal(refused.reply?.error?.code, "OPERATION_NOT_AVAILABLE");
  assert.equal(refused.reply?.headers["x-api-stability"], "experimental");
  const staging = policyHarness(lifecycle, {}, { openapi: NEXT_DOCUMENT, environment: "staging" });
  const served = await staging.request({
    method: "POST",
    path: "/v1/animals",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  assert.equal(served.reply, undefined);
});

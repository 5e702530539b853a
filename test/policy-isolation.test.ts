import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import policies from "../policies/index.ts";
import { definePolicy } from "../src/policy.ts";
import { eventually } from "./support/eventually.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { sampleValue, scrape } from "./support/metrics.ts";

// A policy with a bug: it throws in the phase the request names in X-Fail.
const faulty = definePolicy<Record<string, never>>({
  name: "faulty",
  optionsSchema: { type: "object", additionalProperties: false, required: [], default: {} },
  create: () => {
    const failIn = (phase: string) => (exchange: { headers: Record<string, unknown> }) => {
      if (exchange.headers["x-fail"] === phase) throw new Error(`a bug in ${phase}`);
      return undefined;
    };
    return {
      onArrival: failIn("onArrival"),
      forOperation: () => ({
        onRequest: failIn("onRequest"),
        onRequestBody: failIn("onRequestBody"),
        readsResponseBody: true,
        onResponse: failIn("onResponse"),
        onReply: failIn("onReply"),
      }),
    };
  },
});

const keys = writeKeysFile(["acme"]);
const { key } = keys;

describe("a policy that throws fails its request, not the gateway", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ keys, policies: [...policies, faulty] });
  });
  after(() => gw.close());

  for (const phase of ["onArrival", "onRequest", "onRequestBody", "onResponse"]) {
    test(`a throw in ${phase} is a 500 INTERNAL_ERROR, logged with the policy and phase, and the next request is served`, async () => {
      const before = gw.logs.messages("policy failed").length;
      const failed = await request(`${gw.url}/pets`, {
        key,
        method: "POST",
        headers: { "x-fail": phase },
        body: JSON.stringify({ name: "Biscuit", categoryId: 7, status: "pending" }),
      });
      assert.equal(failed.status, 500);
      assert.deepEqual(failed.json(), {
        code: "INTERNAL_ERROR",
        message: "The gateway failed to handle the request",
        status: 500,
      });
      assert.doesNotMatch(failed.body, /bug|at /);
      const lines = gw.logs.messages("policy failed").slice(before);
      assert.equal(lines.length, 1);
      const line = lines[0] as Record<string, unknown>;
      assert.equal(line.policy, "faulty");
      assert.equal(line.phase, phase);
      assert.equal(line.reqId, failed.headers["x-request-id"]);
      assert.equal((line.error as { message: string }).message, `a bug in ${phase}`);
      assert.ok(!JSON.stringify(line).includes(key), "the key is not in the line");
      const access = await eventually("the access line", () =>
        gw.logs.lines.find((l) => l.msg === "request" && l.reqId === failed.headers["x-request-id"]),
      );
      assert.equal(access.status, 500);
      assert.equal(access.code, "INTERNAL_ERROR");
      assert.equal(access.policyFailed, `faulty ${phase}`);

      const next = await request(`${gw.url}/pets`, { key });
      assert.equal(next.status, 200);
    });
  }

  test("a throw in onReply leaves the answer as it was, and is logged", async () => {
    const before = gw.logs.messages("policy failed").length;
    const answer = await request(`${gw.url}/pets`, { key, headers: { "x-fail": "onReply" } });
    assert.equal(answer.status, 200);
    assert.ok(Array.isArray(answer.json()));
    const lines = gw.logs.messages("policy failed").slice(before);
    assert.equal(lines.length, 1);
    assert.equal((lines[0] as Record<string, unknown>).phase, "onReply");
  });

  test("a failure is counted as a refusal with the reason internal", async () => {
    const refused = async () =>
      sampleValue(await scrape(gw), "gateway_rejections_total", {
        reason: "internal",
        code: "INTERNAL_ERROR",
      });
    const before = await refused();
    const failed = await request(`${gw.url}/pets`, { key, headers: { "x-fail": "onRequest" } });
    assert.equal(failed.status, 500);
    assert.equal(await refused(), before + 1);
  });
});

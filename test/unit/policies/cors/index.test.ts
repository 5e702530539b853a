// CORS's arrival phase, in memory (test/support/policy-harness.ts): which preflights it answers
// itself, and what a page from a configured origin may read of the other answers.
import assert from "node:assert/strict";
import { test } from "node:test";
import cors from "../../../../policies/cors/index.ts";
import { policyHarness } from "../../../support/policy-harness.ts";

const APP = "https://app.example.com";
const gateway = policyHarness(cors, { allowedOrigins: [APP, "http://localhost:5173"] });

const preflight = (origin: string, method = "POST", path = "/v1/pets") => ({
  method: "OPTIONS",
  path,
  headers: {
    origin,
    "access-control-request-method": method,
    "access-control-request-headers": "authorization",
  },
});

test("a preflight from a configured origin is answered 204 by the policy, before routing and authentication", async () => {
  const trial = await gateway.request(preflight(APP));
  assert.equal(trial.forwarded, undefined);
  assert.equal(trial.reply?.status, 204);
  assert.equal(trial.reply?.body, "");
  assert.equal(trial.reply?.headers["access-control-allow-origin"], APP);
  assert.equal(trial.reply?.headers["access-control-allow-methods"], "POST");
  assert.equal(
    trial.reply?.headers["access-control-allow-headers"],
    "authorization, content-type, x-request-id",
  );
  assert.equal(trial.reply?.headers["access-control-max-age"], "600");
  assert.equal(trial.reply?.headers.vary, "Origin");
  assert.equal(trial.exchange.facts.localReply, "cors preflight");
});

test("origins compare as browsers send them: scheme and host in any case", async () => {
  const trial = await gateway.request(preflight("HTTPS://APP.EXAMPLE.COM"));
  assert.equal(trial.reply?.status, 204);
});

test("a preflight from any other origin is not answered: the core's 405, without CORS headers", async () => {
  for (const origin of ["https://evil.example", `${APP}.evil.example`, `${APP}:8443`, "null"]) {
    const trial = await gateway.request(preflight(origin));
    assert.equal(trial.reply?.status, 405, origin);
    assert.equal(trial.reply?.headers["access-control-allow-origin"], undefined, origin);
  }
});

test("a preflight for an operation the document does not have is no way to probe for it", async () => {
  for (const [method, path] of [
    ["DELETE", "/v1/pets"],
    ["GET", "/v1/store/orders"],
  ] as const) {
    const trial = await gateway.request(preflight(APP, method, path));
    assert.notEqual(trial.reply?.status, 204, `${method} ${path}`);
    assert.equal(trial.reply?.headers["access-control-allow-methods"], undefined);
  }
});

test("an answer to a configured origin lets the page read it and the headers the gateway adds", async () => {
  const trial = await gateway.request({ path: "/v1/pets", headers: { origin: APP } });
  assert.ok(trial.forwarded, "a request that is not a preflight goes on");
  const answer = trial.respond({ status: 200, json: [] });
  assert.equal(answer.headers["access-control-allow-origin"], APP);
  assert.equal(answer.headers.vary, "Origin");
  // What the gateway declares: here the core's alone, as CORS is the only policy (the end-to-end
  // suite holds the whole gateway's list).
  assert.equal(answer.headers["access-control-expose-headers"], "x-request-id");
});

test("an answer to any other origin only varies on Origin", async () => {
  const trial = await gateway.request({ path: "/v1/pets", headers: { origin: "https://evil.example" } });
  const answer = trial.respond({ status: 200, json: [], headers: { vary: "Accept-Encoding" } });
  assert.equal(answer.headers["access-control-allow-origin"], undefined);
  assert.equal(answer.headers.vary, "Accept-Encoding, Origin");
});

test('["*"] allows every origin, with no Vary, and exposedHeaders is the whole list a page may read', async () => {
  const any = policyHarness(cors, { allowedOrigins: ["*"], exposedHeaders: ["x-limit-applied"] });
  const trial = await any.request({ path: "/v1/pets", headers: { origin: "https://anyone.example" } });
  const answer = trial.respond({ status: 200, json: [] });
  assert.equal(answer.headers["access-control-allow-origin"], "*");
  assert.equal(answer.headers.vary, undefined);
  assert.equal(answer.headers["access-control-expose-headers"], "x-limit-applied");
});

test("off by default: no answer carries a CORS header and a preflight is the core's 405", async () => {
  const off = policyHarness(cors);
  const answered = await off.request(preflight(APP));
  assert.equal(answered.reply?.status, 405);
  const trial = await off.request({ path: "/v1/pets", headers: { origin: APP } });
  const answer = trial.respond({ status: 200, json: [] });
  assert.equal(answer.headers["access-control-allow-origin"], undefined);
  assert.equal(answer.headers.vary, undefined);
});

test("bad origins stop start-up, saying what an origin is", () => {
  assert.throws(() => policyHarness(cors, { allowedOrigins: ["*", APP] }), {
    message: 'policies.cors.allowedOrigins: "*" allows every origin and stands alone',
  });
  assert.throws(() => policyHarness(cors, { allowedOrigins: [`${APP}/shop`] }), {
    message:
      /^invalid config: \/policies\/cors\/allowedOrigins\/0 .*an origin such as https:\/\/shop\.example/,
  });
});

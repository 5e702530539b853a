// CORS: off unless origins are configured; then a preflight (no key) is answered before
// authentication, for the configured origins and the document's operations only.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import policies from "../policies/index.ts";
import { validateConfig } from "../src/config.ts";
import { PROJECT_ROOT } from "../src/project-files.ts";
import { contractAnswer } from "./fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { watchForCrashes } from "./support/crashes.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { declaredResponseHeaders } from "./support/policy-harness.ts";
import { assertNoSecrets, capturedOutputs } from "./support/secrets.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;
const APP = "https://app.example.com";
const preflight = (origin: string, method = "POST", path = "/pets") => ({
  method: "OPTIONS",
  headers: {
    origin,
    "access-control-request-method": method,
    "access-control-request-headers": "authorization, content-type",
  },
  path,
});

describe("CORS", () => {
  let backend: ProgrammableBackend;
  let off: TestGateway;
  let on: TestGateway;
  const crashes = watchForCrashes();
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    off = await startGateway({ upstreamUrl: backend.url, keys });
    on = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { policies: { cors: { allowedOrigins: [APP, "http://localhost:5173"] } } },
    });
  });
  after(async () => {
    const outputsOff = await capturedOutputs(off);
    const outputsOn = await capturedOutputs(on);
    await off.close();
    await on.close();
    await backend.close();
    crashes.stop();
    assert.deepEqual(crashes.crashes, []);
    assertNoSecrets(keys.keys, outputsOff, "everything the gateway wrote");
    assertNoSecrets(keys.keys, outputsOn, "everything the gateway wrote");
  });

  test("is off by default: a preflight gets 405 and no answer carries CORS headers", async () => {
    const { path, ...options } = preflight(APP);
    const answer = await request(`${off.url}${path}`, options);
    assert.equal(answer.status, 405);
    const simple = await request(`${off.url}/pets`, { key, headers: { origin: APP } });
    assert.equal(simple.status, 200);
    for (const a of [answer, simple]) {
      assert.equal(a.headers["access-control-allow-origin"], undefined);
      assert.equal(a.headers.vary, undefined);
    }
  });

  test("a preflight from a configured origin is answered with 204 before authentication, and never reaches the backend", async () => {
    const seen = backend.requests.length;
    const { path, ...options } = preflight(APP);
    const answer = await request(`${on.url}${path}`, options);
    assert.equal(answer.status, 204);
    assert.equal(answer.body, "");
    assert.equal(answer.headers["access-control-allow-origin"], APP);
    assert.equal(answer.headers["access-control-allow-methods"], "POST");
    assert.match(String(answer.headers["access-control-allow-headers"]), /authorization/);
    assert.equal(answer.headers["access-control-max-age"], "600");
    assert.match(String(answer.headers.vary), /Origin/);
    assert.equal(answer.headers["x-content-type-options"], "nosniff");
    assert.equal(backend.requests.length, seen);
  });

  test("a preflight from any other origin gets no CORS headers (the browser then refuses the call)", async () => {
    for (const origin of [
      "https://evil.example",
      "https://app.example.com.evil.example",
      "null",
      `${APP}:8443`,
    ]) {
      const { path, ...options } = preflight(origin);
      const answer = await request(`${on.url}${path}`, options);
      assert.equal(answer.status, 405, origin);
      assert.equal(answer.headers["access-control-allow-origin"], undefined, origin);
    }
  });

  test("a preflight for an operation the document does not have is not answered", async () => {
    for (const [method, path] of [
      ["DELETE", "/pets"],
      ["GET", "/store/orders"],
      ["POST", "/pets/1"],
    ] as const) {
      const { path: p, ...options } = preflight(APP, method, path);
      const answer = await request(`${on.url}${p}`, options);
      assert.ok(answer.status === 404 || answer.status === 405, `${method} ${path}: ${answer.status}`);
      assert.equal(answer.headers["access-control-allow-methods"], undefined);
    }
  });

  test("simple answers to a configured origin carry Access-Control-Allow-Origin, errors included", async () => {
    const ok = await request(`${on.url}/pets`, { key, headers: { origin: APP } });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers["access-control-allow-origin"], APP);
    // By default a page may read every header the gateway adds, as the core and the policies
    // adding them declare (read from the policies, created with this gateway's config).
    const declared = await declaredResponseHeaders({ config: on.config });
    const everyHeader = [...new Set(Object.values(declared).flat())].sort();
    assert.ok(everyHeader.includes("www-authenticate") && everyHeader.includes("x-limit-applied"));
    assert.deepEqual(String(ok.headers["access-control-expose-headers"]).split(", ").sort(), everyHeader);
    const denied = await request(`${on.url}/pets`, { headers: { origin: "http://localhost:5173" } });
    assert.equal(denied.status, 401, "a request that is not a preflight still needs its key");
    assert.equal(denied.headers["access-control-allow-origin"], "http://localhost:5173");
    const stranger = await request(`${on.url}/pets`, { key, headers: { origin: "https://evil.example" } });
    assert.equal(stranger.status, 200);
    assert.equal(stranger.headers["access-control-allow-origin"], undefined);
    assert.match(String(stranger.headers.vary), /Origin/);
  });

  test("a header a policy adds only for some documents is exposed with them: x-api-stability", async (t) => {
    const gw = await startGateway(
      {
        upstreamUrl: backend.url,
        keys,
        config: {
          openapi: join(PROJECT_ROOT, "test/fixtures/openapi-next.json"),
          policies: { cors: { allowedOrigins: [APP] } },
        },
      },
      t,
    );
    const answer = await request(`${gw.url}/pets`, { headers: { origin: APP } });
    assert.match(String(answer.headers["access-control-expose-headers"]), /(?:^|, )x-api-stability(?:,|$)/);
  });

  test("exposedHeaders, when set, is the whole list a page may read", async (t) => {
    for (const [exposedHeaders, expected] of [
      [["x-request-id"], "x-request-id"],
      [[], undefined],
    ] as const) {
      const gw = await startGateway(
        {
          upstreamUrl: backend.url,
          keys,
          config: { policies: { cors: { allowedOrigins: [APP], exposedHeaders } } },
        },
        t,
      );
      const answer = await request(`${gw.url}/pets`, { key, headers: { origin: APP } });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers["access-control-expose-headers"], expected);
    }
  });

  test("Vary: Origin adds to the backend's own Vary", async () => {
    backend.behave(() => ({
      kind: "respond",
      status: 200,
      headers: { "content-type": "application/json", vary: "Accept-Encoding" },
      body: "[]",
    }));
    try {
      const answer = await request(`${on.url}/pets`, { key, headers: { origin: APP } });
      assert.equal(answer.headers.vary, "Accept-Encoding, Origin");
    } finally {
      backend.behave(contractAnswer);
    }
  });

  test("the backend's own Access-Control-* headers never reach the client: the gateway alone answers for CORS", async () => {
    // A backend that reflects any origin and allows credentials, as a misconfigured framework does.
    backend.behave((req) => {
      const answer = contractAnswer(req);
      if (answer.kind !== "respond") return answer;
      const origin = String(req.headers.origin ?? "*");
      return {
        ...answer,
        headers: {
          ...answer.headers,
          "Access-Control-Allow-Origin": origin,
          "Access-Control-Allow-Credentials": "true",
          "Access-Control-Allow-Methods": "GET, POST, DELETE",
          "Access-Control-Expose-Headers": "x-internal-trace",
          "Access-Control-Max-Age": "86400",
        },
      };
    });
    try {
      const backendCors = (headers: Record<string, unknown>) =>
        Object.keys(headers).filter(
          (name) =>
            name.startsWith("access-control-") &&
            name !== "access-control-allow-origin" &&
            name !== "access-control-expose-headers",
        );
      for (const [gateway, origin] of [
        [off, APP],
        [off, "https://evil.example"],
        [on, "https://evil.example"],
      ] as const) {
        for (const answer of [
          await request(`${gateway.url}/pets`, { key, headers: { origin } }),
          await request(`${gateway.url}/pets/1`, { key, headers: { origin } }),
        ]) {
          assert.equal(answer.status, 200);
          const cors = Object.keys(answer.headers).filter((name) => name.startsWith("access-control-"));
          assert.deepEqual(cors, [], `${origin} through ${gateway === on ? "CORS on" : "CORS off"}`);
        }
      }
      // A configured origin gets the gateway's own answer, never the backend's additions.
      const allowed = await request(`${on.url}/pets`, { key, headers: { origin: APP } });
      assert.equal(allowed.headers["access-control-allow-origin"], APP);
      assert.doesNotMatch(String(allowed.headers["access-control-expose-headers"]), /x-internal-trace/);
      assert.deepEqual(backendCors(allowed.headers), []);
    } finally {
      backend.behave(contractAnswer);
    }
  });

  test("bad CORS options stop start-up", () => {
    for (const cors of [
      { allowedOrigins: ["https://app.example.com/"] },
      { allowedOrigins: ["app.example.com"] },
      { allowedOrigins: ["null"] },
      { allowedHeaders: ["bad header"] },
    ]) {
      assert.throws(() => validateConfig({ policies: { cors } }, policies), /policies\/cors/);
    }
  });
});

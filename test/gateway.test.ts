import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { startGateway, startGatewayProgram, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;

describe("a gateway in front of the demo backend process", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ keys });
  });
  after(() => gw.close());

  test("GET /v1/pets is served from the backend through the gateway", async () => {
    const answer = await request(`${gw.url}/pets`, { key });
    assert.equal(answer.status, 200);
    const pets = answer.json<{ id: number; name: string }[]>();
    assert.ok(pets.length > 0 && pets.length <= 20);
    assert.equal(typeof pets[0]?.name, "string");
    assert.match(String(answer.headers["x-request-id"]), /.+/);
    assert.equal(answer.headers["x-content-type-options"], "nosniff");
  });

  test("an animal created through the gateway can be fetched back through it", async () => {
    const created = await request(`${gw.url}/pets`, {
      key,
      method: "POST",
      body: JSON.stringify({ name: "Biscuit", categoryId: 7, status: "pending" }),
    });
    assert.equal(created.status, 201);
    const pet = created.json<{ id: number; name: string; status: string }>();
    assert.equal(pet.name, "Biscuit");
    const fetched = await request(`${gw.url}/pets/${pet.id}`, { key });
    assert.equal(fetched.status, 200);
    assert.deepEqual(fetched.json(), pet);
    const missing = await request(`${gw.url}/pets/987654321`, { key });
    assert.equal(missing.status, 404);
  });

  test("a path the document does not know gets 404 with an Error body", async () => {
    for (const path of ["/v1/cats", "/v2/pets", "/", "/v1/pets/1/toys", "/v1/store/orders"]) {
      const answer = await request(`${gw.origin}${path}`, { key });
      assert.equal(answer.status, 404, path);
      assert.deepEqual(answer.json(), {
        code: "NOT_FOUND",
        message: "No operation of the interface has this path",
        status: 404,
      });
      assert.ok(gw.gateway.api.validateError(answer.json()));
    }
  });

  test("a known path with another method gets 405 and an Allow header", async () => {
    const answer = await request(`${gw.url}/pets`, { key, method: "DELETE" });
    assert.equal(answer.status, 405);
    assert.equal(answer.headers.allow, "GET, HEAD, POST");
    assert.equal(answer.json<{ code: string }>().code, "METHOD_NOT_ALLOWED");
    const item = await request(`${gw.url}/pets/1`, { key, method: "PUT", body: "{}" });
    assert.equal(item.status, 405);
    assert.equal(item.headers.allow, "GET, HEAD");
  });

  test("HEAD follows GET and carries no body", async () => {
    const answer = await request(`${gw.url}/pets`, { key, method: "HEAD" });
    assert.equal(answer.status, 200);
    assert.equal(answer.body, "");
    // Follows GET: the same operation answers, with GET's headers (a HEAD refused or routed
    // elsewhere would differ here, which status and body alone do not show).
    const get = await request(`${gw.url}/pets`, { key });
    assert.equal(answer.headers["content-type"], get.headers["content-type"]);
    assert.match(String(answer.headers["content-type"]), /^application\/json/);
    assert.equal(answer.headers["x-limit-applied"], get.headers["x-limit-applied"]);
    assert.equal(answer.headers["x-limit-applied"], "20");
    const unknown = await request(`${gw.url}/pets/987654321`, { key, method: "HEAD" });
    assert.equal(unknown.status, 404, "HEAD of a missing animal is GET's 404");
    assert.equal(unknown.body, "");
  });
});

describe("a gateway in front of a backend that misbehaves", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { upstream: { timeoutMs: 400, connectTimeoutMs: 400 } },
    });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  const stillServes = async () => {
    backend.behave(() => ({
      kind: "respond",
      status: 200,
      headers: { "content-type": "application/json" },
      body: "[]",
    }));
    const answer = await request(`${gw.url}/pets`, { key });
    assert.equal(answer.status, 200, "the gateway keeps serving after the fault");
  };

  test("a POST body reaches the backend byte for byte, int64 beyond 2^53 included", async () => {
    const body = '{"name":"Rex","categoryId":1234567890123456789}';
    backend.behave(() => ({
      kind: "respond",
      status: 201,
      headers: { "content-type": "application/json" },
      body: '{"id":9007199254740993,"name":"Rex","categoryId":1234567890123456789}',
    }));
    const before = backend.requests.length;
    const answer = await request(`${gw.url}/pets`, { key, method: "POST", body });
    assert.equal(answer.status, 201);
    assert.equal(answer.body, '{"id":9007199254740993,"name":"Rex","categoryId":1234567890123456789}');
    const seen = backend.requests[before];
    assert.equal(seen?.body.toString("utf8"), body);
    assert.equal(seen?.url, "/v1/pets");
  });

  test("the backend's base path replaces /v1 and the limit is defaulted on the way", async (t) => {
    backend.behave(() => ({
      kind: "respond",
      status: 200,
      headers: { "content-type": "application/json" },
      body: "[]",
    }));
    const answer = await request(`${gw.url}/pets?status=sold`, { key });
    assert.equal(answer.status, 200);
    assert.equal(backend.requests.at(-1)?.url, "/v1/pets?status=sold&limit=20");

    const elsewhere = await startGateway(
      { upstreamUrl: backend.url.replace(/\/v1$/, "/api/petstore/"), keys },
      t,
    );
    assert.equal((await request(`${elsewhere.url}/pets/42`, { key })).status, 200);
    assert.equal(backend.requests.at(-1)?.url, "/api/petstore/pets/42");
  });

  test("a reset before the answer gets 502 and the gateway keeps serving", async () => {
    backend.behave(() => ({ kind: "reset-before-headers" }));
    const answer = await request(`${gw.url}/pets/1`, { key });
    assert.equal(answer.status, 502);
    assert.equal(answer.json<{ code: string }>().code, "UPSTREAM_UNAVAILABLE");
    assert.ok(gw.gateway.api.validateError(answer.json()));
    await stillServes();
  });

  test("a backend that hangs gets 504 within the deadline", async () => {
    backend.behave(() => ({ kind: "hang" }));
    const started = performance.now();
    const answer = await request(`${gw.url}/pets`, { key });
    const elapsed = performance.now() - started;
    assert.equal(answer.status, 504);
    assert.equal(answer.json<{ code: string }>().code, "UPSTREAM_TIMEOUT");
    assert.ok(elapsed >= 350 && elapsed < 2000, `answered after ${elapsed} ms`);
    await stillServes();
  });

  test("a reset in the middle of the body never reaches the client as a complete 200", async () => {
    backend.behave(() => ({
      kind: "reset-mid-body",
      status: 200,
      bodyPrefix: '[{"id":1,"na',
      declaredLength: 500,
    }));
    const outcome = await request(`${gw.url}/pets`, { key }).then(
      (answer) => answer,
      (error: Error) => error,
    );
    if (outcome instanceof Error) assert.match(outcome.message, /aborted|socket hang up|ECONNRESET/);
    else {
      assert.equal(outcome.status, 502);
      assert.equal(outcome.json<{ code: string }>().code, "UPSTREAM_UNAVAILABLE");
    }
    await stillServes();
  });
});

describe("a gateway whose backend is down", () => {
  test("a refused connection gets 502 and the gateway keeps answering", async (t) => {
    const backend = await startProgrammableBackend();
    const url = backend.url;
    await backend.close();
    const gw = await startGateway({ upstreamUrl: url, keys }, t);
    for (let i = 0; i < 3; i++) {
      const answer = await request(`${gw.url}/pets`, { key });
      assert.equal(answer.status, 502);
      assert.equal(answer.json<{ code: string }>().code, "UPSTREAM_UNAVAILABLE");
    }
  });
});

describe("the gateway program (npm start)", () => {
  test("with no upstream it serves the demo backend and prints how to call it with a generated key", async (t) => {
    const program = await startGatewayProgram({ keys: false }, t);
    const [line = ""] = program.stderr().split("\n");
    const match = /curl -s -H 'Authorization: Bearer (\S+)' (http:\/\/localhost:\d+\/v1\/pets)/.exec(line);
    assert.ok(match, line);
    const answer = await request(match[2] as string, { key: match[1] as string });
    assert.equal(answer.status, 200);
    assert.ok(answer.json<unknown[]>().length > 0);
    const refused = await request(match[2] as string, { key: "not-the-key" });
    assert.equal(refused.status, 401);
  });
});

// The backend misbehaves in every way a network allows (restarts under load, resets on reused
// sockets, bytes that are not HTTP) and clients walk away at every step: the gateway answers
// each request, quickly, loses none, and never crashes.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { contractAnswer } from "../fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "../fixtures/programmable-backend.ts";
import { watchForCrashes } from "../support/crashes.ts";
import { DOCUMENTED_STATUSES } from "../support/documented-statuses.ts";
import { eventually } from "../support/eventually.ts";
import { startGateway, type TestGateway } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { assertNoSecrets, capturedOutputs } from "../support/secrets.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;

interface Outcome {
  readonly startedAt: number;
  readonly ms: number;
  readonly status: number; // 0: no HTTP answer at all
  readonly error?: string;
}

/** One request on a keep-alive agent; never rejects: a missing answer is an outcome too. */
function call(agent: http.Agent, url: string, method = "GET", body?: string): Promise<Outcome> {
  const startedAt = performance.now();
  return new Promise((resolve) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const req = http.request(url, { agent, method, headers }, (res) => {
      res.resume();
      res.on("end", () =>
        resolve({ startedAt, ms: performance.now() - startedAt, status: res.statusCode ?? 0 }),
      );
      res.on("error", (error) =>
        resolve({ startedAt, ms: performance.now() - startedAt, status: 0, error: error.message }),
      );
    });
    req.on("error", (error) =>
      resolve({ startedAt, ms: performance.now() - startedAt, status: 0, error: error.message }),
    );
    req.end(body);
  });
}

describe("the backend restarts in the middle of a load run", () => {
  test("during the outage 502/503/504 come quickly, within a second of the restart 2xx again, nothing lost, no gateway error", async () => {
    const crashes = watchForCrashes();
    let backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    const port = Number(new URL(backend.url).port);
    const gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { upstream: { connectTimeoutMs: 500, timeoutMs: 1000 } },
    });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const outcomes: Outcome[] = [];
    let outputs: string[] = [];
    let running = true;
    const worker = async (i: number) => {
      while (running) {
        outcomes.push(
          i % 4 === 3
            ? await call(agent, `${gw.url}/pets`, "POST", '{"name":"Rex","categoryId":7}')
            : await call(agent, `${gw.url}/pets${i % 2 ? "" : "/7"}`),
        );
      }
    };
    const workers = Array.from({ length: 8 }, (_, i) => worker(i));
    try {
      await sleep(600);
      const killedAt = performance.now();
      await backend.close();
      await sleep(800);
      backend = await startProgrammableBackend({ port });
      backend.behave(contractAnswer);
      const restartedAt = performance.now();
      await sleep(1500);
      running = false;
      await Promise.all(workers);

      const unanswered = outcomes.filter((o) => o.status === 0);
      assert.deepEqual(unanswered, [], "every request got an HTTP answer");
      const statuses = new Set(outcomes.map((o) => o.status));
      for (const status of statuses)
        assert.ok([200, 201, 502, 503, 504].includes(status), `status ${status}`);
      const outage = outcomes.filter((o) => o.startedAt > killedAt + 50 && o.startedAt < restartedAt - 50);
      assert.ok(outage.length > 20, `only ${outage.length} requests during the outage`);
      for (const o of outage) {
        assert.ok([502, 503, 504].includes(o.status), `during the outage: ${o.status}`);
        assert.ok(o.ms < 1500, `a request hung ${Math.round(o.ms)} ms during the outage`);
      }
      const recovered = outcomes.filter((o) => o.startedAt > restartedAt + 1000);
      assert.ok(recovered.length > 20, `only ${recovered.length} requests after recovery`);
      assert.deepEqual(
        recovered.filter((o) => o.status >= 300).map((o) => o.status),
        [],
        "a second after the restart everything is 2xx again",
      );
      const before = outcomes.filter((o) => o.startedAt + o.ms < killedAt);
      assert.deepEqual(
        before.filter((o) => o.status >= 300),
        [],
        "what was answered before the kill was 2xx",
      );
      assert.deepEqual(
        gw.logs.lines.filter((line) => line.level === "error" || line.level === "fatal"),
        [],
      );
      assert.equal(
        gw.logs.messages("request").length,
        outcomes.length,
        "one access log line per request, none lost",
      );
    } finally {
      running = false;
      agent.destroy();
      outputs = await capturedOutputs(gw);
      await gw.close();
      await backend.close();
      crashes.stop();
    }
    assert.deepEqual(crashes.crashes, []);
    assertNoSecrets(keys.keys, outputs, "everything the gateway wrote");
  });
});

describe("a kept-alive backend socket reset before the first byte of an answer", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    gw = await startGateway({ upstreamUrl: backend.url, keys });
  });
  after(async () => {
    const outputsGw = await capturedOutputs(gw);
    await gw.close();
    await backend.close();
    assertNoSecrets(keys.keys, outputsGw, "everything the gateway wrote");
  });

  /** Opens `count` backend connections that then sit idle in the gateway's pool. */
  const warmPool = async (count: number) => {
    backend.behave(contractAnswer);
    const answers = await Promise.all(
      Array.from({ length: count }, () => request(`${gw.url}/pets`, { key })),
    );
    assert.ok(answers.every((a) => a.status === 200));
  };

  test("a GET is retried once, on a fresh connection, and the client never notices", async () => {
    await warmPool(3);
    const seen = backend.requests.length;
    // Every reused connection is stale, as after a backend restart: only a new one can answer.
    backend.behave((req) => (req.reuse > 0 ? { kind: "reset-before-headers" } : contractAnswer(req)));
    const answer = await request(`${gw.url}/pets/7`, { key });
    assert.equal(answer.status, 200);
    const attempts = backend.requests.slice(seen);
    assert.equal(attempts.length, 2, "one attempt and one retry");
    assert.ok((attempts[0]?.reuse ?? 0) > 0, "the first went out on a reused connection");
    assert.equal(attempts[1]?.reuse, 0, "the retry went out on a fresh connection");
    assert.equal(attempts[0]?.url, attempts[1]?.url);
  });

  test("a GET is retried only once: a second reset is a 502", async () => {
    await warmPool(2);
    const seen = backend.requests.length;
    backend.behave(() => ({ kind: "reset-before-headers" }));
    const answer = await request(`${gw.url}/pets`, { key });
    assert.equal(answer.status, 502);
    assert.equal(backend.requests.length - seen, 2);
  });

  test("a POST is never retried: the backend sees it once and the client gets 502", async () => {
    await warmPool(2);
    const seen = backend.requests.length;
    backend.behave((req) => (req.reuse > 0 ? { kind: "reset-before-headers" } : contractAnswer(req)));
    const answer = await request(`${gw.url}/pets`, {
      key,
      method: "POST",
      body: '{"name":"Rex","categoryId":7}',
    });
    assert.equal(answer.status, 502);
    assert.equal(answer.json<{ code: string }>().code, "UPSTREAM_UNAVAILABLE");
    const attempts = backend.requests.slice(seen);
    assert.deepEqual(
      attempts.map((r) => r.method),
      ["POST"],
    );
  });
});

describe("no crash, whatever the backend sends and whenever the client leaves", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  const crashes = watchForCrashes();
  const rawBackends: net.Server[] = [];
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { upstream: { timeoutMs: 600, connectTimeoutMs: 500 } },
    });
  });
  after(async () => {
    const outputsGw = await capturedOutputs(gw);
    await gw.close();
    await backend.close();
    for (const server of rawBackends) server.close();
    crashes.stop();
    assert.deepEqual(crashes.crashes, []);
    assertNoSecrets(keys.keys, outputsGw, "everything the gateway wrote");
  });

  /** A backend that answers every connection with these bytes, then closes. */
  const rawBackend = async (bytes: string): Promise<string> => {
    const server = net.createServer((socket) => {
      socket.on("error", () => {});
      socket.once("data", () => socket.end(bytes));
    });
    rawBackends.push(server);
    await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
    return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/v1`;
  };

  const NOT_HTTP: Readonly<Record<string, string>> = {
    "bytes that are not HTTP": "SSH-2.0-OpenSSH_9.6\r\n",
    "a bad Content-Length":
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n[]",
    "Content-Length and Transfer-Encoding":
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "a header block over the cap": `HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(100_000)}\r\n\r\n`,
    "a broken chunk":
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\nzz\r\n",
    "a status of 999": "HTTP/1.1 999 Nope\r\nContent-Length: 0\r\n\r\n",
    "a status of 101 without an upgrade":
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: evil\r\nConnection: upgrade\r\n\r\n",
    "nothing at all": "",
  };

  for (const [name, bytes] of Object.entries(NOT_HTTP)) {
    test(`a backend that sends ${name} gets the client a 502 (or a cut answer), and the gateway goes on`, async (t) => {
      const url = await rawBackend(bytes);
      const odd = await startGateway(
        {
          upstreamUrl: url,
          keys,
          config: { upstream: { timeoutMs: 600 } },
        },
        t,
      );
      const outcome = await request(`${odd.url}/pets`, { key }).then(
        (answer) => answer,
        (error: Error) => error,
      );
      if (outcome instanceof Error) assert.match(outcome.message, /aborted|socket hang up|ECONNRESET/);
      else {
        assert.ok(outcome.status === 502 || outcome.status === 504, `${outcome.status}`);
        assert.ok(gw.gateway.api.validateError(outcome.json()));
      }
      assert.equal((await request(`${gw.url}/pets`, { key })).status, 200);
    });
  }

  // HEAD, 204 and 304 end at their head; bytes a sloppy backend sends after it (the body a naive
  // server writes for HEAD too, a 204 with a Content-Length) are its socket's problem, not the answer's.
  const BODY_AFTER_BODYLESS: readonly (readonly [string, string, string, number])[] = [
    [
      "a body for a HEAD",
      "HEAD",
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]",
      200,
    ],
    [
      "a body after a 204",
      "GET",
      "HTTP/1.1 204 No Content\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]",
      204,
    ],
  ];
  for (const [name, method, bytes, status] of BODY_AFTER_BODYLESS) {
    test(`a backend that sends ${name} still gets the client that answer, whole, and the gateway goes on`, async (t) => {
      const url = await rawBackend(bytes);
      const odd = await startGateway(
        {
          upstreamUrl: url,
          keys,
          config: { upstream: { timeoutMs: 600 } },
        },
        t,
      );
      const answer = await request(`${odd.url}/pets`, { key, method });
      assert.equal(answer.status, status);
      assert.equal(answer.body, "");
      const line = await eventually("the access line", () => odd.logs.messages("request")[0]);
      assert.equal(line.status, status);
      assert.equal(line.aborted, undefined);
      assert.equal((await request(`${gw.url}/pets`, { key })).status, 200);
    });
  }

  test("clients that leave at every step leave the gateway serving, and each request that arrived is logged", async () => {
    const port = Number(new URL(gw.origin).port);
    const logged = gw.logs.messages("request").length;
    const sent = (socket: net.Socket, text: string) =>
      new Promise<void>((done) => socket.write(text, () => done()));
    // Mid-headers (never a request), mid-body, while the backend thinks, while it answers slowly.
    const leavers: Promise<void>[] = [];
    for (let round = 0; round < 20; round++) {
      const head = net.connect(port, "127.0.0.1");
      head.on("error", () => {});
      leavers.push(
        sent(head, `POST /v1/pets HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n`).then(() => {
          head.destroy();
        }),
      );
      const body = net.connect(port, "127.0.0.1");
      body.on("error", () => {});
      leavers.push(
        sent(
          body,
          `POST /v1/pets HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na`,
        ).then(async () => {
          await sleep(50);
          body.destroy();
        }),
      );
    }
    await Promise.all(leavers);
    const leave = (afterMs: number) => {
      const req = http.get(`${gw.url}/pets`, { headers: { authorization: `Bearer ${key}` } });
      req.on("error", () => {});
      setTimeout(() => req.destroy(), afterMs);
    };
    backend.behave(() => ({ kind: "hang" }));
    for (let i = 0; i < 10; i++) leave(50);
    await sleep(200);
    backend.behave(() => ({
      kind: "slow-body",
      status: 200,
      chunks: ["[", '{"id":1,"name":"a","categoryId":1}', "]"],
      delayMs: 200,
    }));
    for (let i = 0; i < 5; i++) leave(150);
    await sleep(400);
    backend.behave(contractAnswer);
    assert.equal((await request(`${gw.url}/pets`, { key })).status, 200);
    const lines = gw.logs.messages("request").slice(logged);
    assert.equal(
      lines.filter((line) => line.status === 499).length,
      35,
      "every client that left is logged as 499",
    );
    assert.ok(lines.every((line) => DOCUMENTED_STATUSES.has(line.status as number) || line.status === 499));
  });
});

// Timeouts that bite: slow headers, slow bodies, idle keep-alive sockets and a backend that
// stalls mid-answer are all cut off within their bound, while ordinary traffic goes on.
import assert from "node:assert/strict";
import http from "node:http";
import type net from "node:net";
import { after, before, describe, test } from "node:test";
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import { ConfigError } from "../../src/startup-errors.ts";
import { contractAnswer } from "../fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "../fixtures/programmable-backend.ts";
import { watchForCrashes } from "../support/crashes.ts";
import { startGateway, type TestGateway } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { dribble, parseResponses, rawExchange } from "../support/raw-socket.ts";
import { assertNoSecrets, capturedOutputs } from "../support/secrets.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;
const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 2000;
// Node checks the two timeouts once per interval (min(1 s, headers timeout)): a generous bound
// on top, for a busy machine, still far below what an attacker would need.
const CUT_OFF_BOUND_MS = REQUEST_TIMEOUT_MS + 1000 + 3000;

describe("timeouts that bite", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let port: number;
  const crashes = watchForCrashes();
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: {
        server: {
          headersTimeoutMs: HEADERS_TIMEOUT_MS,
          requestTimeoutMs: REQUEST_TIMEOUT_MS,
          keepAliveTimeoutMs: 600,
        },
        upstream: { timeoutMs: 500 },
      },
    });
    port = Number(new URL(gw.origin).port);
  });
  after(async () => {
    const outputsGw = await capturedOutputs(gw);
    await gw.close();
    await backend.close();
    crashes.stop();
    assert.deepEqual(crashes.crashes, []);
    assertNoSecrets(keys.keys, outputsGw, "everything the gateway wrote");
  });

  test("a slowloris of 300 sockets dribbling header bytes is cut off within the bound while normal traffic goes on", async () => {
    const attackers = Array.from({ length: 300 }, () => dribble(port, 200));
    const silent = Array.from({ length: 20 }, () => dribble(port, 1_000_000));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const statuses = new Map<number, number>();
    let slowest = 0;
    const started = performance.now();
    const allClosed = () => [...attackers, ...silent].every((s) => s.closedAt !== undefined);
    const client = async () => {
      while (!allClosed() && performance.now() - started < CUT_OFF_BOUND_MS + 2000) {
        const t0 = performance.now();
        const status = await new Promise<number>((resolve, reject) => {
          const req = http.get(
            `${gw.url}/pets`,
            { agent, headers: { authorization: `Bearer ${key}` } },
            (res) => {
              res.resume();
              res.on("end", () => resolve(res.statusCode ?? 0));
            },
          );
          req.on("error", reject);
        });
        slowest = Math.max(slowest, performance.now() - t0);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        await new Promise((wake) => setTimeout(wake, 10));
      }
    };
    await Promise.all([client(), client(), client(), client()]);
    agent.destroy();
    for (const socket of [...attackers, ...silent]) {
      assert.ok(socket.closedAt !== undefined, "a slow socket is still open");
      const lifetime = (socket.closedAt as number) - socket.openedAt;
      assert.ok(lifetime < CUT_OFF_BOUND_MS, `a slow socket lived ${Math.round(lifetime)} ms`);
    }
    // Those that sent anything get the Error object with 408, not a silent drop.
    const answered = attackers.map((s) => parseResponses(s.received)[0]);
    assert.ok(
      answered.every((a) => a?.status === 408 && JSON.parse(a.body).code === "REQUEST_TIMEOUT"),
      JSON.stringify(answered.find((a) => a?.status !== 408)),
    );
    assert.deepEqual([...statuses.keys()], [200], `normal traffic got ${JSON.stringify([...statuses])}`);
    assert.ok((statuses.get(200) ?? 0) >= 20, `only ${statuses.get(200)} normal requests went through`);
    assert.ok(slowest < 2000, `a normal request waited ${Math.round(slowest)} ms during the attack`);
  });

  test("a body that dribbles in is cut off by the request timeout with 408 and never reaches the backend", async () => {
    const seen = backend.requests.length;
    const head = `POST /v1/pets HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n`;
    const started = performance.now();
    const outcome = await rawExchange(port, [head, ...Array.from({ length: 100 }, () => " ")], {
      gapMs: 100,
      waitMs: CUT_OFF_BOUND_MS + 2000,
    });
    const elapsed = performance.now() - started;
    assert.ok(outcome.closed, "the connection stayed open");
    assert.ok(elapsed < CUT_OFF_BOUND_MS, `cut off after ${Math.round(elapsed)} ms`);
    assert.equal(outcome.responses[0]?.status, 408, outcome.text);
    assert.equal(JSON.parse(outcome.responses[0]?.body ?? "{}").code, "REQUEST_TIMEOUT");
    assert.equal(backend.requests.length, seen);
    const logged = gw.logs.lines.filter(
      (line) => line.code === "REQUEST_TIMEOUT" && line.operation === "createPet",
    );
    assert.equal(logged.length, 1, "the refusal is logged once, against its operation");
  });

  test("an idle keep-alive connection is closed after the configured keep-alive timeout", async () => {
    const started = performance.now();
    const outcome = await rawExchange(
      port,
      `GET /v1/pets HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      {
        waitMs: 5000,
      },
    );
    const elapsed = performance.now() - started;
    assert.equal(outcome.responses[0]?.status, 200);
    assert.match(outcome.responses[0]?.headers["keep-alive"] ?? "", /timeout=0|timeout=1/);
    assert.ok(outcome.closed, "the idle connection stayed open");
    assert.ok(elapsed >= 500 && elapsed < 4000, `closed after ${Math.round(elapsed)} ms`);
  });

  test("by default the keep-alive timeout outlasts a load balancer's 60 s idle timeout", () => {
    const config = validateConfig({}, policies);
    assert.ok(config.server.keepAliveTimeoutMs > 60_000);
    assert.ok(config.server.headersTimeoutMs <= config.server.requestTimeoutMs);
  });

  test("a headers timeout above the request timeout, or a drain longer than the deadline, is refused at start-up", () => {
    assert.throws(
      () => validateConfig({ server: { headersTimeoutMs: 5000, requestTimeoutMs: 1000 } }, policies),
      (error: Error) => error instanceof ConfigError && /headersTimeoutMs/.test(error.message),
    );
    assert.throws(
      () => validateConfig({ server: { shutdownDrainMs: 5000, shutdownTimeoutMs: 5000 } }, policies),
      (error: Error) => error instanceof ConfigError && /shutdownDrainMs/.test(error.message),
    );
  });

  test("a backend that stalls in the middle of its answer is cut off by the deadline, and the gateway goes on", async () => {
    backend.behave(() => ({
      kind: "slow-body",
      status: 200,
      chunks: ['[{"id":1,', '"name":"Rex",', '"categoryId":7}', "]"],
      delayMs: 400,
    }));
    const started = performance.now();
    const outcome = await request(`${gw.url}/pets`, { key }).then(
      (answer) => answer,
      (error: Error) => error,
    );
    const elapsed = performance.now() - started;
    backend.behave(contractAnswer);
    if (outcome instanceof Error) assert.match(outcome.message, /aborted|socket hang up|ECONNRESET/);
    else assert.equal(outcome.status, 504, "a stalled answer is never passed on as complete");
    assert.ok(elapsed < 3000, `cut off after ${Math.round(elapsed)} ms`);
    assert.equal((await request(`${gw.url}/pets`, { key })).status, 200);
  });
});

describe("a connection that never sends a byte", () => {
  let slowBackend: http.Server;
  let gw: TestGateway;
  let port: number;
  const BACKEND_DELAY_MS = HEADERS_TIMEOUT_MS * 2.5;
  before(async () => {
    // Answers inside the contract, but only after longer than the headers timeout.
    slowBackend = http.createServer((_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end("[]");
      }, BACKEND_DELAY_MS);
    });
    slowBackend.listen(0, "127.0.0.1");
    await new Promise((listening) => slowBackend.once("listening", listening));
    const { port: backendPort } = slowBackend.address() as net.AddressInfo;
    gw = await startGateway({
      upstreamUrl: `http://127.0.0.1:${backendPort}/v1`,
      keys,
      config: {
        server: { headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS * 3 },
        upstream: { timeoutMs: BACKEND_DELAY_MS * 3 },
      },
    });
    port = Number(new URL(gw.origin).port);
  });
  after(async () => {
    await gw.close();
    slowBackend.closeAllConnections();
    slowBackend.close();
  });

  test("is closed within the headers timeout on the public port, as nginx's client_header_timeout does", async () => {
    const started = performance.now();
    const outcome = await rawExchange(port, [], { waitMs: CUT_OFF_BOUND_MS + 2000 });
    const elapsed = performance.now() - started;
    assert.ok(outcome.closed, "the silent connection stayed open");
    assert.ok(elapsed < CUT_OFF_BOUND_MS, `closed after ${Math.round(elapsed)} ms`);
  });

  test("while a request that did arrive may wait on its backend longer than that", async () => {
    const started = performance.now();
    const answer = await request(`${gw.url}/pets`, { key });
    assert.equal(answer.status, 200);
    assert.ok(performance.now() - started >= BACKEND_DELAY_MS - 50);
  });
});

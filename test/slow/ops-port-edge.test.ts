// The ops port holds no more for a client than the public port: the same timeouts cut slow and
// idle connections, a cap of its own bounds how many it holds, and what the parser refuses gets
// the Error object. Timed, so it runs alone.
import assert from "node:assert/strict";
import { once } from "node:events";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "../fixtures/programmable-backend.ts";
import { watchForCrashes } from "../support/crashes.ts";
import { eventually } from "../support/eventually.ts";
import { startGateway, type TestGateway } from "../support/gateway.ts";
import { writeKeysFile } from "../support/keys.ts";
import { dribble, parseResponses, rawExchange } from "../support/raw-socket.ts";

const keys = writeKeysFile(["acme"]);
const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 2000;
// The ops port's own keep-alive, well below the public port's: an idle connection there only
// holds a slot a probe may need.
const KEEP_ALIVE_TIMEOUT_MS = 5000;
const OPS_KEEP_ALIVE_TIMEOUT_MS = 300;
const MAX_OPS_CONNECTIONS = 4;
// Node checks the two timeouts once a second: a generous bound on top for a busy machine.
const CUT_OFF_BOUND_MS = REQUEST_TIMEOUT_MS + 1000 + 3000;

describe("the ops port's edge", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let opsPort: number;
  const crashes = watchForCrashes();
  before(async () => {
    backend = await startProgrammableBackend();
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: {
        server: {
          headersTimeoutMs: HEADERS_TIMEOUT_MS,
          requestTimeoutMs: REQUEST_TIMEOUT_MS,
          keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
          opsKeepAliveTimeoutMs: OPS_KEEP_ALIVE_TIMEOUT_MS,
          maxOpsConnections: MAX_OPS_CONNECTIONS,
        },
      },
    });
    opsPort = Number(new URL(gw.opsUrl).port);
  });
  after(async () => {
    await gw.close();
    await backend.close();
    crashes.stop();
    assert.deepEqual(crashes.crashes, []);
  });

  test("a connection dribbling header bytes is cut off with 408 within the request timeout", async () => {
    const slow = dribble(opsPort, 200, "/healthz");
    await eventually(
      "the dribbling connection closed",
      () => slow.closedAt !== undefined,
      CUT_OFF_BOUND_MS + 2000,
    );
    const lifetime = (slow.closedAt as number) - slow.openedAt;
    assert.ok(lifetime < CUT_OFF_BOUND_MS, `held ${Math.round(lifetime)} ms`);
    const [answer] = parseResponses(slow.received);
    assert.equal(answer?.status, 408, slow.received);
    assert.equal(JSON.parse(answer.body).code, "REQUEST_TIMEOUT");
  });

  test("a connection that never sends a byte is closed within the headers timeout", async () => {
    const started = performance.now();
    const outcome = await rawExchange(opsPort, [], { waitMs: CUT_OFF_BOUND_MS + 2000 });
    const elapsed = performance.now() - started;
    assert.ok(outcome.closed, "the silent connection stayed open");
    assert.ok(elapsed < CUT_OFF_BOUND_MS, `closed after ${Math.round(elapsed)} ms`);
  });

  test("an idle keep-alive connection is closed after the ops port's keep-alive timeout, not the public port's", async () => {
    const started = performance.now();
    const outcome = await rawExchange(opsPort, "GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n", {
      waitMs: 10_000,
    });
    const elapsed = performance.now() - started;
    assert.equal(outcome.responses[0]?.status, 200);
    assert.ok(outcome.closed, "the idle connection stayed open");
    assert.ok(
      elapsed >= OPS_KEEP_ALIVE_TIMEOUT_MS - 100 && elapsed < KEEP_ALIVE_TIMEOUT_MS - 2000,
      `closed after ${Math.round(elapsed)} ms`,
    );
  });

  test("what the parser refuses gets the Error object and a closed connection, not a silent drop", async () => {
    for (const [bytes, status, code] of [
      ["GET /healthz HTTP/1.1\r\nHost: gw\r\nX\tNote: 1\r\n\r\n", 400, "BAD_REQUEST"],
      [
        "GET /healthz HTTP/1.1\r\nHost: gw\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        400,
        "BAD_REQUEST",
      ],
      [`GET /healthz HTTP/1.1\r\nHost: gw\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`, 431, "HEADERS_TOO_LARGE"],
      // As on the public port: a method token the parser does not know is a method not implemented.
      ["FOO /healthz HTTP/1.1\r\nHost: gw\r\n\r\n", 501, "NOT_IMPLEMENTED"],
    ] as const) {
      const outcome = await rawExchange(opsPort, bytes);
      assert.ok(outcome.closed);
      const [answer] = outcome.responses;
      assert.equal(answer?.status, status, outcome.text);
      const error = JSON.parse(answer.body) as { code: string };
      assert.equal(error.code, code);
      assert.ok(gw.gateway.api.validateError(error), answer.body);
    }
  });

  test("it holds at most server.maxOpsConnections connections: a newcomer closes the one idle longest, and is answered", async () => {
    const held = Array.from({ length: MAX_OPS_CONNECTIONS }, () => {
      const socket = net.connect(opsPort, "127.0.0.1");
      socket.on("error", () => {});
      return socket;
    });
    await eventually("the held connections open", () => held.every((socket) => !socket.connecting));
    const closed = held.map(() => false);
    held.forEach((socket, index) => {
      socket.on("close", () => {
        closed[index] = true;
      });
    });
    // The first one comes back to life: it is no longer the one idle longest.
    const [first, second] = held as [net.Socket, net.Socket];
    first.write("GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n");
    await once(first, "data");
    const over = await rawExchange(opsPort, "GET /healthz HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n");
    assert.equal(over.responses[0]?.status, 200, over.text);
    await eventually("the connection idle longest is closed", () => closed[1]);
    assert.deepEqual(
      closed,
      held.map((socket) => socket === second),
    );
    for (const socket of held) socket.destroy();
  });

  test("the cap defaults to 64 and must be a positive integer", () => {
    assert.equal(validateConfig({}, policies).server.maxOpsConnections, 64);
    assert.throws(() => validateConfig({ server: { maxOpsConnections: 0 } }, policies), /maxOpsConnections/);
  });
});

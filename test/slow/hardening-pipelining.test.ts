import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PIPELINE_DEPTH } from "../../src/pipeline/connection-state.ts";
import { contractAnswer } from "../fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "../fixtures/programmable-backend.ts";
import { watchForCrashes } from "../support/crashes.ts";
import { eventually } from "../support/eventually.ts";
import { pipelinedRequest } from "../support/framing-probes.ts";
import { startGateway, type TestGateway } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { rawExchange } from "../support/raw-socket.ts";
import { sentinelReached } from "../support/sentinel.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;

/** Requests numbered by their X-Request-Id; the last asks to close, so an exchange ends with its answer. */
function numbered(count: number): { readonly requests: string[]; readonly ids: string[] } {
  const ids = Array.from({ length: count }, (_, i) => `pipelined-${i}`);
  const requests = ids.map((id, i) =>
    pipelinedRequest(key).replace(
      "\r\n\r\n",
      `\r\nX-Request-Id: ${id}\r\n${i === count - 1 ? "Connection: close\r\n" : ""}\r\n`,
    ),
  );
  return { requests, ids };
}

describe("pipelining: one connection cannot make the gateway hold an unbounded number of requests", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let port: number;
  const crashes = watchForCrashes();
  before(async () => {
    backend = await startProgrammableBackend();
    gw = await startGateway({ upstreamUrl: backend.url, keys });
    port = Number(new URL(gw.origin).port);
  });
  after(async () => {
    await gw.close();
    await backend.close();
    crashes.stop();
    assert.deepEqual(crashes.crashes, []);
  });

  test(`answers streamed: past ${PIPELINE_DEPTH} requests in flight the connection is not read until one is answered`, async () => {
    backend.requests.length = 0;
    backend.behave(() => ({ kind: "hang" }));
    // Answers not held by the gateway (no contract check): only the depth bounds what is in flight.
    const streaming = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { policies: { responseContract: { mode: "off" } } },
    });
    // One request per write, a little apart, so that each read holds about one request.
    const parts = Array.from({ length: 3 * PIPELINE_DEPTH }, () => pipelinedRequest(key));
    let written = false;
    const done = new AbortController();
    const exchange = rawExchange(Number(new URL(streaming.origin).port), parts, {
      gapMs: 2,
      waitMs: 3000,
      signal: done.signal,
      onWritten: () => {
        written = true;
      },
    });
    await eventually("the backend holds the first requests", () => backend.requests.length >= PIPELINE_DEPTH);
    await eventually("every request written", () => written);
    const sentinel = await sentinelReached(`${streaming.url}/pets`, key, backend);
    const fromTheConnection = backend.requests.filter((r) => r.headers["x-request-id"] !== sentinel).length;
    assert.ok(
      fromTheConnection <= PIPELINE_DEPTH + 4,
      `${fromTheConnection} requests reached the backend from one connection`,
    );
    // The backend answers none of them: the connection is not waited out.
    done.abort();
    await exchange;
    await streaming.close();
    backend.behave(contractAnswer);
  });

  test("answers held to be checked: a connection has about two at the backend, the rest wait unread", async () => {
    backend.requests.length = 0;
    backend.behave(() => ({ kind: "hang" }));
    // An answer asked for counts as the size cap (1 MiB) against the connection's 1 MiB of held answers.
    const parts = Array.from({ length: 3 * PIPELINE_DEPTH }, () => pipelinedRequest(key));
    let written = false;
    const done = new AbortController();
    const exchange = rawExchange(port, parts, {
      gapMs: 2,
      waitMs: 3000,
      signal: done.signal,
      onWritten: () => {
        written = true;
      },
    });
    await eventually("the backend holds the first requests", () => backend.requests.length >= 2);
    await eventually("every request written", () => written);
    const sentinel = await sentinelReached(`${gw.url}/pets`, key, backend);
    const fromTheConnection = backend.requests.filter((r) => r.headers["x-request-id"] !== sentinel).length;
    assert.equal(fromTheConnection, 2, `${fromTheConnection} requests reached the backend`);
    done.abort();
    await exchange;
    backend.behave(contractAnswer);
  });

  test("requests held back are served, in order, once the backend answers", async () => {
    backend.requests.length = 0;
    backend.behave(contractAnswer);
    const count = 3 * PIPELINE_DEPTH;
    const { requests, ids } = numbered(count);
    const outcome = await rawExchange(port, requests, { gapMs: 1, waitMs: 5000 });
    assert.ok(outcome.closed);
    assert.equal(outcome.responses.length, count);
    assert.ok(outcome.responses.every((response) => response.status === 200));
    assert.deepEqual(
      outcome.responses.map((response) => response.headers["x-request-id"]),
      ids,
    );
    // Each forwarded once; over several backend connections they may arrive in any order.
    assert.deepEqual(backend.requests.map((seen) => seen.headers["x-request-id"]).sort(), [...ids].sort());
  });

  test("a flood pipelined in one write is served in order, never more than the depth at the backend at once", async () => {
    backend.requests.length = 0;
    let atOnce = 0;
    let most = 0;
    backend.behave(() => {
      atOnce += 1;
      most = Math.max(most, atOnce);
      // Counted out a little before the answer ends (at 5 ms): never more than were at the backend.
      setTimeout(() => {
        atOnce -= 1;
      }, 4);
      return { kind: "slow-body", status: 200, chunks: ["[", "]"], delayMs: 5 };
    });
    // All in one write: Node parses a whole read at once, whatever the gateway does.
    const count = 20 * PIPELINE_DEPTH;
    const { requests, ids } = numbered(count);
    const outcome = await rawExchange(port, requests.join(""), { waitMs: 20_000 });
    assert.ok(outcome.closed, "the connection was closed after the last answer");
    assert.equal(outcome.responses.length, count);
    assert.ok(outcome.responses.every((response) => response.status === 200));
    assert.equal(backend.requests.length, count);
    assert.deepEqual(
      outcome.responses.map((response) => response.headers["x-request-id"]),
      ids,
    );
    // Each forwarded once; over several backend connections they may arrive in any order.
    assert.deepEqual(backend.requests.map((seen) => seen.headers["x-request-id"]).sort(), [...ids].sort());
    assert.ok(most <= PIPELINE_DEPTH, `${most} requests of one connection at the backend at once`);
    // Every other connection is served as before.
    backend.behave(contractAnswer);
    const next = await request(`${gw.url}/pets`, { key });
    assert.equal(next.status, 200);
  });
});

// The one observe step, with fake metrics and a pino logger writing to memory.
import assert from "node:assert/strict";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Writable } from "node:stream";
import { test } from "node:test";
import pino from "pino";
import { gatewayError } from "../../../src/errors.ts";
import type { Metrics } from "../../../src/metrics.ts";
import type { Operation } from "../../../src/openapi.ts";
import { newExchange } from "../../../src/pipeline/exchange.ts";
import { createObserve } from "../../../src/pipeline/observe.ts";

function setUp() {
  const calls: unknown[][] = [];
  const metrics = {
    // The trace id of an exemplar (a fifth argument) is the tracing tests' to check.
    observeRequest: (...args: unknown[]) => void calls.push(["request", ...args.slice(0, 4)]),
    observeRejection: (...args: unknown[]) => void calls.push(["rejection", ...args]),
    observeUpstream: (...args: unknown[]) => void calls.push(["upstream", args[0], args[1], args[2]]),
    observeOverhead: (operation: string) => void calls.push(["overhead", operation]),
  } as unknown as Metrics;
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const abandoned: unknown[] = [];
  const onClose = createObserve(
    metrics,
    pino(sink),
    (exchange) => void abandoned.push(exchange),
    () => {},
    // Says which rule labelled a status: the backend's (this one) or the gateway's own (the number).
    (operation, status) => `backend ${status} of ${operation?.id}`,
  );
  const req = {
    url: "/v1/pets?api_key=secret",
    method: "GET",
    headers: {},
    socket: { destroyed: false },
  } as unknown as IncomingMessage;
  const res = { statusCode: 200, writableFinished: true, headersSent: true };
  const exchange = newExchange(req, res as ServerResponse, "id-1", "203.0.113.9");
  const close = () => onClose.call(res as ServerResponse);
  return { calls, lines, abandoned, close, res, exchange };
}

test("a refused request is counted, its refusal too, and logged once with its code and reason", () => {
  const { calls, lines, close, res, exchange } = setUp();
  const error = gatewayError("NOT_FOUND");
  exchange.rejection = error;
  res.statusCode = 404;
  close();
  close();
  assert.deepEqual(
    calls.map((call) => call.slice(0, 4)),
    [
      ["request", "unmatched", "GET", "404"],
      ["rejection", "unmatched", error.reason, "NOT_FOUND"],
    ],
  );
  assert.equal(lines.length, 1);
  assert.equal(lines[0]?.msg, "request");
  assert.equal(lines[0]?.reqId, "id-1");
  assert.equal(lines[0]?.status, 404);
  assert.equal(lines[0]?.code, "NOT_FOUND");
  assert.equal(lines[0]?.path, "/v1/pets?api_key=[redacted]");
  assert.equal(exchange.finished, true);
});

test("a proxied request is counted with its operation, its backend time and the gateway's overhead", () => {
  const { calls, lines, abandoned, close, exchange } = setUp();
  exchange.operation = { id: "listPets" } as Operation;
  exchange.upstreamStartedAt = exchange.startedAt + 1;
  exchange.upstreamEndedAt = exchange.startedAt + 3;
  exchange.upstreamStatus = 200;
  exchange.consumer = "demo";
  exchange.notes.limitAdjusted = true;
  close();
  assert.deepEqual(calls, [
    ["request", "listPets", "GET", "backend 200 of listPets", calls[0]?.[4]],
    ["upstream", "listPets", "GET", "backend 200 of listPets"],
    ["overhead", "listPets"],
  ]);
  assert.equal(lines[0]?.upstreamMs, 2);
  assert.equal(lines[0]?.upstreamStatus, 200);
  assert.equal(lines[0]?.consumer, "demo");
  assert.deepEqual(lines[0]?.notes, { limitAdjusted: true });
  assert.deepEqual(abandoned, []);
});

test("a policy's note sits under notes: one named status or consumer never replaces the core's field", () => {
  const { lines, close, exchange } = setUp();
  exchange.consumer = "demo";
  exchange.notes.status = 999;
  exchange.notes.consumer = "somebody else";
  close();
  assert.equal(lines[0]?.status, 200);
  assert.equal(lines[0]?.consumer, "demo");
  assert.deepEqual(lines[0]?.notes, { status: 999, consumer: "somebody else" });
});

test("a line without notes has no notes field", () => {
  const { lines, close } = setUp();
  close();
  assert.equal("notes" in (lines[0] ?? {}), false);
});

test("an answer cut mid-way is 499 when the client left, 502 when the backend failed, and the backend is let go", () => {
  const left = setUp();
  left.res.writableFinished = false;
  left.exchange.upstreamStartedAt = 1;
  left.close();
  assert.equal(left.lines[0]?.status, 499);
  assert.equal(left.lines[0]?.aborted, true);
  assert.deepEqual(left.abandoned, [left.exchange]);

  const failed = setUp();
  failed.res.writableFinished = false;
  failed.exchange.facts.upstreamFault = "reset mid-body";
  failed.close();
  assert.equal(failed.lines[0]?.status, 502);
});

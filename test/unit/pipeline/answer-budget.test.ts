// The answer budget and the connection gate, with the core's own exchange over a socket and a
// response that never touched the network.
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { test } from "node:test";
import { type AnswerBudget, createAnswerBudget } from "../../../src/pipeline/answer-budget.ts";
import { admitRequest, requestEnded, waitTurn } from "../../../src/pipeline/connection-state.ts";
import { newExchange } from "../../../src/pipeline/exchange.ts";

const limits = { maxBufferedBytes: 1000, maxQueuedAnswerBytes: 300, maxResponseBodyBytes: 200 };

function connection() {
  return Object.assign(new EventEmitter(), { destroyed: false }) as unknown as Socket;
}

function exchangeOn(socket: Socket, budget: AnswerBudget) {
  const res = new EventEmitter() as unknown as ServerResponse;
  const req = { url: "/v1/pets", headers: {}, socket } as unknown as IncomingMessage;
  const exchange = newExchange(req, res, "id", "");
  // What the pipeline does when the response closes (observe's answerClosed).
  return { exchange, close: () => budget.release(exchange) };
}

test("the process budget is full once its bytes are held, and free again when the answers close", () => {
  const budget = createAnswerBudget(limits);
  const a = exchangeOn(connection(), budget);
  const b = exchangeOn(connection(), budget);
  assert.equal(budget.take(a.exchange, 600), true);
  assert.equal(budget.take(b.exchange, 500), false, "what does not fit is not taken");
  assert.equal(budget.take(b.exchange, 400), true);
  assert.equal(budget.isFull(), true);
  a.close();
  assert.equal(budget.isFull(), false);
  assert.equal(budget.take(b.exchange, 600), true, "released once: the room is a's 600 again");
  a.exchange.finished = true;
  assert.equal(budget.take(a.exchange, 1), false, "a finished answer takes nothing it could never release");
});

test("a connection's next request waits while its held and reserved answers pass the limit", () => {
  const socket = connection();
  const budget = createAnswerBudget(limits);
  assert.equal(admitRequest(socket, limits.maxQueuedAnswerBytes), true);
  const first = exchangeOn(socket, budget);
  budget.reserve(first.exchange); // 200: within 300
  assert.equal(admitRequest(socket, limits.maxQueuedAnswerBytes), true);
  const second = exchangeOn(socket, budget);
  budget.reserve(second.exchange); // 400: past 300
  assert.equal(admitRequest(socket, limits.maxQueuedAnswerBytes), false);
  const started: string[] = [];
  waitTurn(socket, () => started.push("third"));
  // The first answer arrives small: its 10 bytes replace its 200 reserved, 210 in all.
  assert.equal(budget.take(first.exchange, 10), true);
  assert.deepEqual(started, ["third"], "the waiting request starts once there is room");
  // Answers end: nothing else waits, and the counts come back to nothing.
  first.close();
  requestEnded(socket, limits.maxQueuedAnswerBytes);
  second.close();
  requestEnded(socket, limits.maxQueuedAnswerBytes);
  requestEnded(socket, limits.maxQueuedAnswerBytes);
  assert.equal(admitRequest(socket, limits.maxQueuedAnswerBytes), true);
});

test("requests waiting on a connection that is gone are dropped, not started", () => {
  const socket = connection();
  const budget = createAnswerBudget(limits);
  admitRequest(socket, limits.maxQueuedAnswerBytes);
  const only = exchangeOn(socket, budget);
  budget.reserve(only.exchange);
  budget.take(only.exchange, 301);
  const started: string[] = [];
  waitTurn(socket, () => started.push("late"));
  (socket as { destroyed: boolean }).destroyed = true;
  only.close();
  requestEnded(socket, limits.maxQueuedAnswerBytes);
  assert.deepEqual(started, []);
});

test("the process budget is full once one more answer of the cap would not fit, not only when held to the byte", () => {
  // 1000 bytes of room, answers of up to 200: at 850 held, the next answer may not fit.
  const budget = createAnswerBudget(limits);
  const a = exchangeOn(connection(), budget);
  assert.equal(budget.isFull(), false, "nothing held: room for any answer");
  assert.equal(budget.take(a.exchange, 800), true);
  assert.equal(budget.isFull(), false, "200 left: one more answer of the cap fits");
  assert.equal(budget.take(a.exchange, 50), true);
  assert.equal(budget.isFull(), true, "150 left: the door closes before an answer overflows");
  a.close();
  assert.equal(budget.isFull(), false);
});

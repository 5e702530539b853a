// When a connection's answer is cut: the verdict alone, over sockets described by their counters.
import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { test } from "node:test";
import { judgeSending } from "../../../src/pipeline/send-watchdog.ts";

const limits = { sendTimeoutMs: 1000, sendDeadlineMs: 5000 };

function socketSending(answer?: { headersSent: boolean }) {
  const state = { writableLength: 0, bytesWritten: 0, _httpMessage: answer ?? null };
  return { state, socket: state as unknown as Socket };
}

test("bytes waiting that do not move for sendTimeoutMs are a stall; any progress re-arms it", () => {
  const { state, socket } = socketSending();
  state.writableLength = 65_536;
  state.bytesWritten = 1_000_000;
  assert.equal(judgeSending(socket, 0, limits), undefined);
  assert.equal(judgeSending(socket, 900, limits), undefined);
  // The kernel took 10,000 more bytes: progress.
  state.bytesWritten += 10_000;
  assert.equal(judgeSending(socket, 1500, limits), undefined);
  assert.equal(judgeSending(socket, 2400, limits), undefined);
  assert.equal(judgeSending(socket, 2600, limits)?.code, "SEND_TIMEOUT");
});

test("nothing waiting to be sent is never a stall, however long", () => {
  const { socket } = socketSending();
  assert.equal(judgeSending(socket, 0, limits), undefined);
  assert.equal(judgeSending(socket, 60_000, limits), undefined);
});

test("an answer going on past sendDeadlineMs is cut, even while it moves", () => {
  const { state, socket } = socketSending({ headersSent: true });
  state.writableLength = 1;
  for (let now = 0; now <= 5000; now += 500) {
    state.bytesWritten += 1000;
    assert.equal(judgeSending(socket, now, limits), undefined, `at ${now} ms`);
  }
  state.bytesWritten += 1000;
  assert.equal(judgeSending(socket, 5500, limits)?.message, "The answer took longer than the send deadline");
});

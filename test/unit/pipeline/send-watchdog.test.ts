// When a connection's answer is cut: the verdict alone, over sockets described by their counters.
import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { test } from "node:test";
import { judgeSending, newSendWatch } from "../../../src/pipeline/send-watchdog.ts";

const limits = { sendTimeoutMs: 1000, sendDeadlineMs: 5000 };

function socketSending(answer?: { headersSent: boolean }) {
  const state = { writableLength: 0, bytesWritten: 0, _httpMessage: answer ?? null };
  const socket = state as unknown as Socket;
  const watch = newSendWatch();
  return { state, socket, judge: (now: number) => judgeSending(socket, watch, now, limits) };
}

test("bytes waiting that do not move for sendTimeoutMs are a stall; any progress re-arms it", () => {
  const { state, judge } = socketSending();
  state.writableLength = 65_536;
  state.bytesWritten = 1_000_000;
  assert.equal(judge(0), undefined);
  assert.equal(judge(900), undefined);
  // The kernel took 10,000 more bytes: progress.
  state.bytesWritten += 10_000;
  assert.equal(judge(1500), undefined);
  assert.equal(judge(2400), undefined);
  assert.equal(judge(2600)?.code, "SEND_TIMEOUT");
});

test("nothing waiting to be sent is never a stall, however long", () => {
  const { judge } = socketSending();
  assert.equal(judge(0), undefined);
  assert.equal(judge(60_000), undefined);
});

test("an answer going on past sendDeadlineMs is cut, even while it moves", () => {
  const { state, judge } = socketSending({ headersSent: true });
  state.writableLength = 1;
  for (let now = 0; now <= 5000; now += 500) {
    state.bytesWritten += 1000;
    assert.equal(judge(now), undefined, `at ${now} ms`);
  }
  state.bytesWritten += 1000;
  assert.equal(judge(5500)?.message, "The answer took longer than the send deadline");
});

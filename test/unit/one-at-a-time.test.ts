// Reloads and file reads never overlap: calls made during a run share the one run after it, and a
// run that fails does not block the ones after it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { oneAtATime } from "../../src/one-at-a-time.ts";

function gate() {
  let open = () => {};
  let fail = (_: Error) => {};
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

test("calls made during a run wait for it and share one run after it", async () => {
  const gates = [gate(), gate()];
  const started: string[] = [];
  const runs = oneAtATime(async (why: string) => {
    const index = started.push(why) - 1;
    await gates[index]?.promise;
    return `${why} done`;
  });
  const first = runs.call("a");
  const second = runs.call("b");
  const third = runs.call("c");
  assert.equal(second, third);
  assert.equal(runs.running, true);
  assert.equal(runs.pending, second);
  gates[0]?.open();
  assert.equal(await first, "a done");
  gates[1]?.open();
  assert.equal(await second, "b done");
  assert.deepEqual(started, ["a", "b"]);
  assert.equal(runs.busy, false);
  assert.equal(runs.pending, undefined);
});

test("a run that fails does not hold back the run queued after it, nor later calls", async () => {
  const first = gate();
  let calls = 0;
  const runs = oneAtATime(async () => {
    calls++;
    if (calls === 1) await first.promise;
    return calls;
  });
  const failing = runs.call();
  const queued = runs.call();
  first.fail(new Error("stuck read"));
  await assert.rejects(failing, /stuck read/);
  assert.equal(await queued, 2);
  assert.equal(await runs.call(), 3);
});

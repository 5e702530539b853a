// The cluster primary's decisions that need no process: how many workers, when to restart one.
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { test } from "node:test";
import policies from "../../../policies/index.ts";
import { nextRestart, workerCount } from "../../../src/cluster/primary.ts";
import { loadConfig } from "../../../src/config.ts";

test("a worker that keeps dying young is restarted ever more slowly; one that lived a while at once", () => {
  let state = { streak: 0, delayMs: 0 };
  const delays: number[] = [];
  for (let i = 0; i < 10; i++) {
    state = nextRestart(state.streak, 50);
    delays.push(state.delayMs);
  }
  assert.deepEqual(delays, [100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 10_000]);
  assert.deepEqual(nextRestart(state.streak, 60_000), { streak: 0, delayMs: 0 });
});

test("WORKERS is a count or auto, one per core", () => {
  const env = { GATEWAY_CONFIG: "", UPSTREAM_URL: "http://127.0.0.1:9/v1" };
  assert.equal(workerCount(loadConfig({ policies, env: { ...env, WORKERS: "3" } }).workers), 3);
  assert.equal(
    workerCount(loadConfig({ policies, env: { ...env, WORKERS: "auto" } }).workers),
    availableParallelism(),
  );
  assert.equal(workerCount(loadConfig({ policies, env }).workers), 1);
  assert.throws(() => loadConfig({ policies, env: { ...env, WORKERS: "0" } }), /WORKERS/);
  assert.throws(() => loadConfig({ policies, env: { ...env, WORKERS: "many" } }), /WORKERS/);
});

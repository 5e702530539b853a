// Work in slices: a sort that yields to the loop gives what the engine's stable sort gives.
import assert from "node:assert/strict";
import { test } from "node:test";
import { slices, sortInSlices } from "../../src/slices.ts";

test("sortInSlices sorts as Array.prototype.sort does, stably, at any size", async () => {
  for (const size of [0, 1, 63, 64, 65, 1000, 5003]) {
    const items = Array.from({ length: size }, (_, i) => ({ key: (i * 7919) % 97, at: i }));
    const expected = [...items].sort((a, b) => a.key - b.key);
    assert.deepEqual(await sortInSlices(items, (a, b) => a.key - b.key), expected, `size ${size}`);
  }
});

test("a sort of many items lets the loop turn between its slices", async () => {
  let turns = 0;
  const ticker = setInterval(() => turns++, 0);
  const items = Array.from({ length: 200_000 }, (_, i) => `consumer-${(i * 7919) % 200_003}`);
  await sortInSlices(items, (a, b) => (a < b ? -1 : a > b ? 1 : 0), slices(1));
  clearInterval(ticker);
  assert.ok(turns > 0, "the sort held the loop from start to end");
  for (let i = 1; i < items.length; i++) assert.ok((items[i - 1] as string) <= (items[i] as string));
});

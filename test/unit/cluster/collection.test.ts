// What a cluster primary keeps of a worker that died: its counters and report parts, merged by
// the policies' own merge functions, without letting one of them end the primary.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Registry } from "prom-client";
import { createGroupCollection, type Parts } from "../../../src/cluster/collection.ts";
import type { ServedReport } from "../../../src/ops.ts";

function collectionWith(merge: ServedReport["merge"], failures: unknown[][]) {
  const report: ServedReport = { merge, render: () => {} };
  return createGroupCollection({
    live: () => [],
    reports: new Map([["/calls", report]]),
    registry: new Registry(),
    beforeScrape: () => {},
    mergeFailed: (path, error) => void failures.push([path, error]),
  });
}
const partsOf = (calls: number): Parts => ({ metrics: undefined, reports: new Map([["/calls", { calls }]]) });

test("dead workers' report parts are merged into what the ops port serves", async () => {
  const collection = collectionWith(
    (parts) => ({ calls: parts.reduce<number>((sum, part) => sum + (part as { calls: number }).calls, 0) }),
    [],
  );
  collection.retire(partsOf(3));
  collection.retire(partsOf(4));
  assert.deepEqual(await collection.source.reportParts("/calls"), [{ calls: 7 }]);
});

test("a policy's merge that throws on a dead worker's part is reported, and the primary goes on", async () => {
  const failures: unknown[][] = [];
  const boom = new Error("part.operations is not iterable");
  const collection = collectionWith(() => {
    throw boom;
  }, failures);
  collection.retire(partsOf(3));
  assert.doesNotThrow(() => collection.retire(partsOf(4)));
  assert.deepEqual(failures, [["/calls", boom]]);
  assert.deepEqual(await collection.source.reportParts("/calls"), [{ calls: 3 }]);
});

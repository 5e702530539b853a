// What a cluster primary keeps of a worker that died: its counters and report parts, merged by
// the policies' own merge functions, without letting one of them end the primary.
import assert from "node:assert/strict";
import type { Worker } from "node:cluster";
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

test("a worker that does not answer a scrape counts by what it said last, but says nothing of the document version", async () => {
  const stale: Parts = {
    metrics: [
      {
        name: "gateway_document_info",
        help: "h",
        type: "gauge",
        aggregator: "sum",
        values: [{ value: 1, labels: { version: "1.0.0", sha256: "old" } }],
      },
      {
        name: "gateway_rejections_total",
        help: "h",
        type: "counter",
        aggregator: "sum",
        values: [{ value: 7, labels: { operation: "listPets", reason: "auth", code: "MISSING_API_KEY" } }],
      },
    ] as unknown as Parts["metrics"],
    reports: new Map(),
  };
  // Not connected: the primary's question goes unanswered, as a worker's that is too slow.
  const silent = { isConnected: () => false } as unknown as Worker;
  const collection = createGroupCollection({
    live: () => [{ worker: silent, parts: stale, holds: () => true }],
    reports: new Map(),
    registry: new Registry(),
    beforeScrape: () => {},
    mergeFailed: () => {},
  });
  const scraped = await collection.source.metrics();
  assert.match(scraped, /^gateway_rejections_total\{.*\} 7$/m);
  assert.doesNotMatch(scraped, /gateway_document_info\{/);
});

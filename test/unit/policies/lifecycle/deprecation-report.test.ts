// The report's data: tallies of several processes merge into what one tally of every call says.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CallerTally,
  type DeprecationReport,
  mergeReports,
} from "../../../../policies/lifecycle/deprecation-report.ts";
import { GET_PET } from "../../../support/get-pet-deprecation.ts";

test("the parts of several worker processes merge into one report: sums, earliest first seen, latest last seen", () => {
  const facts = [GET_PET];
  const at = (iso: string) => Date.parse(iso);
  const worker1 = new CallerTally(100);
  worker1.record("getPet", "acme", at("2030-11-01T10:00:00Z"), "acme/1");
  worker1.record("getPet", "acme", at("2030-11-03T10:00:00Z"), "acme/3");
  worker1.record("getPet", "globex", at("2030-11-02T10:00:00Z"), "globex/1");
  const worker2 = new CallerTally(100);
  worker2.record("getPet", "acme", at("2030-10-30T10:00:00Z"), "acme/0");
  worker2.record("getPet", "acme", at("2030-11-02T10:00:00Z"), "acme/2");
  worker2.record("getPet", "initech", at("2030-11-04T10:00:00Z"), "initech/1");
  const whole = new CallerTally();
  for (const [consumer, iso, agent] of [
    ["acme", "2030-11-01T10:00:00Z", "acme/1"],
    ["acme", "2030-11-03T10:00:00Z", "acme/3"],
    ["globex", "2030-11-02T10:00:00Z", "globex/1"],
    ["acme", "2030-10-30T10:00:00Z", "acme/0"],
    ["acme", "2030-11-02T10:00:00Z", "acme/2"],
    ["initech", "2030-11-04T10:00:00Z", "initech/1"],
  ] as const) {
    whole.record("getPet", consumer, at(iso), agent);
  }
  const now = at("2030-11-05T00:00:00Z");
  // Parts cross process boundaries as JSON.
  const parts = [worker1, worker2].map(
    (tally) => JSON.parse(JSON.stringify(tally.report(facts, now))) as DeprecationReport,
  );
  const merged = mergeReports(parts);
  assert.deepEqual(merged, whole.report(facts, now));
  const acmeRow = merged.operations[0]?.callers.find((row) => row.consumer === "acme");
  assert.deepEqual(acmeRow, {
    consumer: "acme",
    firstSeen: "2030-10-30T10:00:00.000Z",
    lastSeen: "2030-11-03T10:00:00.000Z",
    calls: 4,
    lastUserAgent: "acme/3",
  });
  assert.equal(merged.operations[0]?.calls, 6);
  assert.deepEqual(mergeReports([parts[0] as DeprecationReport]), parts[0]);
});

test("a merged report counts since its earliest part: a restarted worker's part does not hide the older calls", () => {
  const part = (countingSince: string | undefined): DeprecationReport => ({
    generatedAt: "2030-11-05T00:00:00.000Z",
    ...(countingSince === undefined ? {} : { countingSince }),
    operations: [],
  });
  const merged = mergeReports([
    part("2030-11-04T09:00:00.000Z"),
    part("2030-11-01T08:00:00.000Z"),
    part(undefined),
  ]);
  assert.equal(merged.countingSince, "2030-11-01T08:00:00.000Z");
  assert.equal("countingSince" in mergeReports([part(undefined), part(undefined)]), false);
});

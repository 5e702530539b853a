// The drift report rebuilt from log lines, which come from many replicas in any order.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ViolationTally } from "../../../../policies/response-contract/violation-log-lines.ts";

const line = (fields: Record<string, unknown>) =>
  JSON.stringify({
    level: "warn",
    time: "2026-11-25T10:00:00.000Z",
    reqId: "r",
    operation: "getPet",
    upstreamStatus: 200,
    rule: "schema:type",
    pointer: "/categoryId",
    message: "must be integer",
    excerpt: '"seven"',
    mode: "report",
    action: "passed",
    msg: "contract violation",
    ...fields,
  });

test("violation lines in any order give counts by rule and the latest example of each kind", () => {
  const tally = new ViolationTally();
  const lines = [
    line({ at: "2030-11-02T00:00:00.000Z", excerpt: '"two"', pointer: "/items/3/categoryId" }),
    line({ at: "2030-11-03T00:00:00.000Z", excerpt: '"three"', pointer: "/items/0/categoryId" }),
    line({ at: "2030-11-01T00:00:00.000Z", excerpt: '"one"', pointer: "/items/1/categoryId" }),
    line({ at: "2030-11-01T12:00:00.000Z", rule: "status", pointer: "", upstreamStatus: 418 }),
    `2030-11-03T00:00:00Z stdout F ${line({ operation: "listPets", at: "2030-11-04T00:00:00.000Z", mode: "enforce", action: "rejected" })}`,
    line({ msg: "request" }),
    "contract violation {broken",
  ];
  assert.deepEqual(
    lines.map((text) => tally.recordLogLine(text)),
    [true, true, true, true, true, false, false],
  );
  const report = tally.report(5);
  assert.deepEqual(Object.keys(report.operations), ["getPet", "listPets"]);
  const getPet = report.operations.getPet;
  assert.equal(getPet?.violations, 4);
  assert.deepEqual(getPet?.byRule, { "schema:type": 3, status: 1 });
  const schema = getPet?.recent[0];
  assert.equal(schema?.where, "/items/*/categoryId");
  assert.equal(schema?.count, 3);
  assert.equal(schema?.firstSeen, "2030-11-01T00:00:00.000Z");
  assert.equal(schema?.lastSeen, "2030-11-03T00:00:00.000Z");
  assert.equal(schema?.last.excerpt, '"three"');
  assert.equal(getPet?.recent[1]?.rule, "status");
  assert.equal(report.operations.listPets?.mode, "enforce");
  assert.equal(tally.report(1).operations.getPet?.recent.length, 1);
});

test("a line without the gateway's own instant is dated by pino's time; an operation named __proto__ stays a name", () => {
  const tally = new ViolationTally();
  assert.equal(tally.recordLogLine(line({ operation: "__proto__" })), true);
  const report = tally.report(5);
  assert.ok(Object.hasOwn(report.operations, "__proto__"));
  assert.equal(Object.getPrototypeOf(report.operations), Object.prototype);
  const drift = Object.getOwnPropertyDescriptor(report.operations, "__proto__")?.value;
  assert.equal(drift?.recent[0]?.lastSeen, "2026-11-25T10:00:00.000Z");
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { recordLogLine } from "../../../../policies/lifecycle/deprecation-log-lines.ts";
import { CallerTally } from "../../../../policies/lifecycle/deprecation-report.ts";

test("lines that are not deprecated-call lines are skipped by the log reader", () => {
  const tally = new CallerTally();
  assert.equal(recordLogLine(tally, '{"msg":"request","operation":"getPet","consumer":"acme"}'), false);
  assert.equal(recordLogLine(tally, "deprecated call {broken"), false);
  assert.equal(
    recordLogLine(tally, '{"msg":"deprecated call","operation":"getPet","consumer":"acme","calledAt":"x"}'),
    false,
  );
  assert.equal(
    recordLogLine(
      tally,
      '{"msg":"deprecated call","operation":"getPet","consumer":"acme","calledAt":"2030-01-01T00:00:00Z"}',
    ),
    true,
  );
});

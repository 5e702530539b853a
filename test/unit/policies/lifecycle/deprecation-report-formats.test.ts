import assert from "node:assert/strict";
import { test } from "node:test";
import type {
  DeprecationReport,
  OperationReport,
} from "../../../../policies/lifecycle/deprecation-report.ts";
import { reportToCsv } from "../../../../policies/lifecycle/deprecation-report-formats.ts";
import { getPetSection } from "../../../support/get-pet-deprecation.ts";

const report: DeprecationReport = {
  generatedAt: "2030-11-05T00:00:00.000Z",
  operations: [
    getPetSection({
      daysToSunset: 30,
      calls: 2,
      forgottenCallers: 0,
      callers: [
        {
          consumer: "acme",
          firstSeen: "2030-11-01T10:00:00.000Z",
          lastSeen: "2030-11-03T10:00:00.000Z",
          calls: 2,
          lastUserAgent: '=HYPERLINK("x"),1',
        },
      ],
    }),
  ],
};

const section = report.operations[0] as OperationReport;

test("the CSV has one row per consumer, quoted by RFC 4180, with a formula-shaped user agent kept as text", () => {
  assert.equal(
    reportToCsv(report),
    "operation,consumer,first_seen,last_seen,calls,last_user_agent,sunset,days_to_sunset,successor\r\n" +
      'getPet,acme,2030-11-01T10:00:00.000Z,2030-11-03T10:00:00.000Z,2,"\'=HYPERLINK(""x""),1",' +
      `${section.sunset},30,${section.successor}\r\n`,
  );
});

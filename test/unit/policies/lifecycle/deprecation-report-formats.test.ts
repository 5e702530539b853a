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

// What a spreadsheet runs as a formula when a cell starts with it (OWASP "CSV injection").
const FORMULA_LEADS = ["=", "+", "-", "@", "\t", "\r"];

/** RFC 4180 rows back into cells, the way a spreadsheet imports them. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index] as string;
    if (quoted) {
      if (char === '"' && text[index + 1] === '"') {
        cell += '"';
        index++;
      } else if (char === '"') quoted = false;
      else cell += char;
    } else if (char === '"') quoted = true;
    else if (char === ",") {
      row.push(cell);
      cell = "";
    } else if (char === "\r" && text[index + 1] === "\n") {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
      index++;
    } else cell += char;
  }
  return rows;
}

test("no CSV cell a spreadsheet opens starts a formula, whichever column the text is in", () => {
  for (const lead of FORMULA_LEADS) {
    const hostile = `${lead}cmd|' /C calc'!A0`;
    const hostileReport: DeprecationReport = {
      generatedAt: report.generatedAt,
      operations: [
        {
          ...section,
          operation: hostile,
          sunset: hostile,
          successor: hostile,
          daysToSunset: -3,
          callers: [
            { consumer: hostile, firstSeen: hostile, lastSeen: hostile, calls: 2, lastUserAgent: hostile },
          ],
        },
      ],
    };
    const [header, row, ...rest] = parseCsv(reportToCsv(hostileReport));
    assert.deepEqual(rest, []);
    assert.equal(row?.length, header?.length);
    for (const [index, cell] of (row ?? []).entries()) {
      const column = header?.[index];
      if (column === "calls") assert.equal(cell, "2");
      // A negative number of days is a number, not a formula: it stays one.
      else if (column === "days_to_sunset") assert.equal(cell, "-3");
      else assert.equal(cell, `'${hostile}`, `${JSON.stringify(lead)} in ${column}`);
    }
  }
});

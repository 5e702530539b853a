// The deprecation report as a client asks for it on the ops port: JSON by default, CSV for
// spreadsheets, the HTML page (deprecation-page.ts) for a browser. Every CSV cell is defused,
// because a spreadsheet runs what looks like a formula: user agents are a client's text, but
// consumer names, operationIds and successors are text someone else typed too.
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import Negotiator from "negotiator";
import { CSV_QUOTED, FORMULA_START, INTEGER_LITERAL } from "../../src/untrusted-text.ts";
import { DEFAULT_QUIET_DAYS, DEPRECATION_PAGE_CSP, renderDeprecationPage } from "./deprecation-page.ts";
import type { DeprecationReport } from "./deprecation-report.ts";

/** One row per (operation, consumer), for spreadsheets and humans. */
export function reportToCsv(report: DeprecationReport): string {
  const lines = [
    "operation,consumer,first_seen,last_seen,calls,last_user_agent,sunset,days_to_sunset,successor",
  ];
  for (const section of report.operations) {
    for (const row of section.callers) {
      lines.push(
        [
          section.operation,
          row.consumer,
          row.firstSeen,
          row.lastSeen,
          String(row.calls),
          row.lastUserAgent,
          section.sunset ?? "",
          section.daysToSunset === null ? "" : String(section.daysToSunset),
          section.successor ?? "",
        ]
          .map(csvCell)
          .join(","),
      );
    }
  }
  return `${lines.join("\r\n")}\r\n`;
}

export function renderReport(
  report: DeprecationReport,
  query: ReadonlyMap<string, string>,
  res: ServerResponse,
  headers: IncomingHttpHeaders,
): void {
  const format = query.get("format") ?? (acceptsHtml(headers) ? "html" : "json");
  if (format === "html") {
    const page = renderDeprecationPage({
      report,
      scope: { kind: "replica", since: report.countingSince },
      quietDays: DEFAULT_QUIET_DAYS,
    });
    res.writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      "content-length": Buffer.byteLength(page),
      "content-security-policy": DEPRECATION_PAGE_CSP,
      "x-content-type-options": "nosniff",
      "cache-control": "no-store",
      vary: "accept",
    });
    res.end(page);
    return;
  }
  const csv = format === "csv";
  const body = csv ? reportToCsv(report) : `${JSON.stringify(report, null, 2)}\n`;
  res.writeHead(200, {
    "content-type": csv ? "text/csv; charset=utf-8" : "application/json",
    "content-length": Buffer.byteLength(body),
    "cache-control": "no-store",
    // Without ?format the Accept header chooses: a cache must not give a browser's page to curl.
    vary: "accept",
  });
  res.end(body);
}

/** A browser asks for text/html before JSON; curl (any type) and an API client's JSON get JSON. */
function acceptsHtml(headers: IncomingHttpHeaders): boolean {
  return new Negotiator({ headers }).mediaType(NEGOTIATED) === "text/html";
}
const NEGOTIATED = ["application/json", "text/html"];

// A cell a spreadsheet would run as a formula (=, +, -, @, tab, CR first) gets a quote in front so
// it stays text; an integer is a number, not a formula (days_to_sunset is negative after the
// sunset). Then RFC 4180 quoting.
function csvCell(value: string): string {
  const text = FORMULA_START.test(value) && !INTEGER_LITERAL.test(value) ? `'${value}` : value;
  return CSV_QUOTED.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

// The deprecation report as a client asks for it on the ops port: JSON by default, CSV for
// spreadsheets, the HTML page (deprecation-page.ts) for a browser. Every CSV cell is defused,
// because a spreadsheet runs what looks like a formula: user agents are a client's text, but
// consumer names, operationIds and successors are text someone else typed too.
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import Negotiator from "negotiator";
import { gatewayError } from "../../src/errors.ts";
import { INTEGER_LITERAL } from "../../src/json/integers.ts";
import type { PreparedReport } from "../../src/policy.ts";
import { sendError, sendOwnAnswer } from "../../src/replies.ts";
import { slices, sortInSlices } from "../../src/slices.ts";
import {
  DEFAULT_QUIET_DAYS,
  DEPRECATION_PAGE_CSP,
  type PageReport,
  pageReport,
  renderDeprecationPage,
} from "./deprecation-page.ts";
import {
  byRecency,
  type CallerRow,
  type DeprecationReport,
  type OperationReport,
} from "./deprecation-report.ts";

/** A cell a spreadsheet would run as a formula. */
const FORMULA_START = /^[=+\-@\t\r]/;
/** A cell that needs RFC 4180 quotes. */
const CSV_QUOTED = /[",\r\n]/;

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

/** Rows of the JSON and CSV per request, at most: a client pages through the rest with ?after=. */
export const MAX_PAGE_ROWS = 1000;
/**
 * How long a prepared report larger than one page answers requests before it is built again:
 * clients asking in a loop cost one build per this, however many they are. One page or less is
 * built for every request, as cheap as sending it.
 */
export const SNAPSHOT_REUSE_MS = 2000;

/** The report as the ops port serves it: built in slices, then answered from for a while. */
export interface PreparedDeprecations {
  readonly generatedAt: string;
  readonly countingSince: string | undefined;
  readonly operations: readonly {
    readonly head: Omit<OperationReport, "callers">;
    /** Every caller by consumer name: a page is a range of it, so a cursor outlives the snapshot. */
    readonly byName: readonly CallerRow[];
  }[];
  /** The page's view: PAGE_CALLERS per list. */
  readonly page: PageReport;
}

export async function prepareReport(
  report: DeprecationReport,
): Promise<PreparedReport<PreparedDeprecations>> {
  const work = slices();
  const operations: PreparedDeprecations["operations"][number][] = [];
  let rows = 0;
  for (const { callers, ...head } of report.operations) {
    rows += callers.length;
    operations.push({ head, byName: await sortInSlices([...callers], byConsumer, work) });
  }
  return {
    prepared: {
      generatedAt: report.generatedAt,
      countingSince: report.countingSince,
      operations,
      // The replica counts up to now: quiet is counted back from the report's instant.
      page: await pageReport(report, { days: DEFAULT_QUIET_DAYS, asOf: report.generatedAt }, work),
    },
    reuseForMs: rows > MAX_PAGE_ROWS ? SNAPSHOT_REUSE_MS : 0,
  };
}

function byConsumer(a: CallerRow, b: CallerRow): number {
  return a.consumer < b.consumer ? -1 : a.consumer > b.consumer ? 1 : 0;
}

const BAD_LIMIT = gatewayError("BAD_REQUEST", `limit must be a whole number from 1 to ${MAX_PAGE_ROWS}`);
const BAD_CURSOR = gatewayError("BAD_REQUEST", "after must be the next cursor of an earlier page");

export function renderReport(
  prepared: PreparedDeprecations,
  query: ReadonlyMap<string, string>,
  res: ServerResponse,
  headers: IncomingHttpHeaders,
): void {
  const format = query.get("format") ?? (acceptsHtml(headers) ? "html" : "json");
  if (format === "html") {
    const page = renderDeprecationPage({
      report: prepared.page,
      scope: { kind: "replica", since: prepared.countingSince },
    });
    sendOwnAnswer(
      res,
      200,
      {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": DEPRECATION_PAGE_CSP,
        vary: "accept",
      },
      page,
    );
    return;
  }
  const limit = pageLimit(query.get("limit"));
  if (limit === undefined) return sendError(res, BAD_LIMIT);
  const after = query.get("after");
  const start = after === undefined ? { operation: 0, row: 0 } : startAfter(prepared, after);
  if (start === undefined) return sendError(res, BAD_CURSOR);
  const { report, next } = pageOf(prepared, start, limit);
  const csv = format === "csv";
  const body = csv
    ? reportToCsv(report)
    : `${JSON.stringify(next === undefined ? report : { ...report, next }, null, 2)}\n`;
  sendOwnAnswer(
    res,
    200,
    {
      "content-type": csv ? "text/csv; charset=utf-8" : "application/json",
      // Without ?format the Accept header chooses: a cache must not give a browser's page to curl.
      vary: "accept",
      // RFC 8288, relative to this request's path, as GitHub's API pages.
      ...(next !== undefined && {
        link: `<?${query.has("format") ? `format=${format}&` : ""}limit=${limit}&after=${next}>; rel="next"`,
      }),
    },
    body,
  );
}

function pageLimit(given: string | undefined): number | undefined {
  if (given === undefined) return MAX_PAGE_ROWS;
  if (!/^[1-9][0-9]{0,6}$/.test(given)) return undefined;
  const limit = Number(given);
  return limit <= MAX_PAGE_ROWS ? limit : undefined;
}

/** The cursor names the last row of a page (operation, consumer), not a position in a snapshot. */
function cursorOf(operation: string, consumer: string): string {
  return Buffer.from(JSON.stringify([operation, consumer])).toString("base64url");
}

function startAfter(
  prepared: PreparedDeprecations,
  cursor: string,
): { operation: number; row: number } | undefined {
  let named: unknown;
  try {
    named = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (!Array.isArray(named) || named.length !== 2 || !named.every((part) => typeof part === "string")) {
    return undefined;
  }
  const [operationName, consumer] = named as [string, string];
  const operation = prepared.operations.findIndex(({ head }) => head.operation === operationName);
  if (operation === -1) return undefined;
  const { byName } = prepared.operations[operation] as PreparedDeprecations["operations"][number];
  // The first consumer named after the cursor's: binary search, the snapshot may have changed.
  let low = 0;
  let high = byName.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((byName[middle] as CallerRow).consumer <= consumer) low = middle + 1;
    else high = middle;
  }
  return { operation, row: low };
}

/** Up to `limit` rows from `start`: every operation's figures, the callers of this page most recent first. */
function pageOf(
  prepared: PreparedDeprecations,
  start: { readonly operation: number; readonly row: number },
  limit: number,
): { report: DeprecationReport; next: string | undefined } {
  let left = limit;
  let next: string | undefined;
  const operations = prepared.operations.map(({ head, byName }, index) => {
    if (index < start.operation || left === 0) return { ...head, callers: [] };
    const from = index === start.operation ? start.row : 0;
    const callers = byName.slice(from, from + left);
    left -= callers.length;
    const last = callers.at(-1);
    if (left === 0 && last !== undefined && hasRowsAfter(prepared, index, from + callers.length)) {
      next = cursorOf(head.operation, last.consumer);
    }
    return { ...head, callers: callers.sort(byRecency) };
  });
  return {
    report: {
      generatedAt: prepared.generatedAt,
      ...(prepared.countingSince === undefined ? {} : { countingSince: prepared.countingSince }),
      operations,
    },
    next,
  };
}

function hasRowsAfter(prepared: PreparedDeprecations, operation: number, row: number): boolean {
  if (row < (prepared.operations[operation]?.byName.length ?? 0)) return true;
  return prepared.operations.slice(operation + 1).some(({ byName }) => byName.length > 0);
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

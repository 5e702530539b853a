// The deprecation report: who still calls each deprecated operation, how often, first and last
// seen. One data shape for three producers that must agree figure for figure: the lifecycle
// policy's ops report (/deprecations), the merge of several worker processes' parts, and the
// log-based command (scripts/deprecation-report.ts) that answers for a whole fleet. How the
// report is written out is deprecation-report-formats.ts; how log lines feed it, deprecation-log-lines.ts.
import { LRUCache } from "lru-cache";
import { type Slices, slices } from "../../src/slices.ts";

/** One day, in the milliseconds the reports count in. */
export const DAY_MS = 86_400_000;
/** The msg of the log line written for every deprecated call; log pipelines filter on it. */
export const DEPRECATED_CALL_MSG = "deprecated call";
/** User agents are the caller's own text: kept to this many characters in log lines and the report. */
export const USER_AGENT_MAX = 256;

/** What the report says about a deprecated operation, whoever calls it. */
export interface DeprecatedOperationFacts {
  readonly operation: string;
  readonly method: string;
  /** The public path, base path included: /v1/pets/{petId}. */
  readonly path: string;
  /** Undefined for a deprecation nobody dated. */
  readonly since: number | undefined;
  readonly sunset: number | undefined;
  /** "GET /v1/pets", or undefined when the document names no successor. */
  readonly successor: string | undefined;
}

export interface CallerRow {
  readonly consumer: string;
  readonly firstSeen: string;
  readonly lastSeen: string;
  readonly calls: number;
  readonly lastUserAgent: string;
}

export interface OperationReport {
  readonly operation: string;
  readonly method: string;
  readonly path: string;
  /** null when the deprecation is undated (or the operation is not in the document). */
  readonly since: string | null;
  readonly sunset: string | null;
  readonly successor: string | null;
  /** Whole days from generatedAt to the sunset, rounded up; negative after it; null without a sunset. */
  readonly daysToSunset: number | null;
  /** Every deprecated call counted, including those of callers the bounded memory has forgotten. */
  readonly calls: number;
  /** Caller rows dropped to keep memory bounded (least recently seen first); 0 means the list is whole. */
  readonly forgottenCallers: number;
  /** Most recently seen first. */
  readonly callers: readonly CallerRow[];
}

/** Plain JSON: it crosses process boundaries when workers' parts are merged. */
export interface DeprecationReport {
  readonly generatedAt: string;
  /**
   * When the processes behind an ops report started counting (the earliest of them): their
   * figures cover no call before it. The log-based report has none: its lines say when they were written.
   */
  readonly countingSince?: string;
  readonly operations: readonly OperationReport[];
}

interface CallerEntry {
  firstSeen: number;
  lastSeen: number;
  calls: number;
  lastUserAgent: string;
}

interface OperationTotals {
  calls: number;
  forgotten: number;
}

/**
 * Per (operation, consumer) tallies. With maxCallers the rows live in an LRU: the callers that
 * still call stay, the ones not seen for longest go first, and the operation's total and a count
 * of forgotten rows stay exact. Without it (the log command) a plain Map holds every row.
 */
export class CallerTally {
  readonly #rows: Map<string, CallerEntry> | LRUCache<string, CallerEntry>;
  readonly #totals = new Map<string, OperationTotals>();

  constructor(maxCallers?: number) {
    this.#rows =
      maxCallers === undefined
        ? new Map()
        : new LRUCache<string, CallerEntry>({
            max: maxCallers,
            dispose: (_value, key, reason) => {
              if (reason === "evict") this.#totalsOf(key.slice(0, key.indexOf("\u0000"))).forgotten++;
            },
          });
  }

  record(operation: string, consumer: string, at: number, userAgent: string): void {
    this.#totalsOf(operation).calls++;
    const key = `${operation}\u0000${consumer}`;
    const row = this.#rows.get(key);
    const agent = userAgent.length > USER_AGENT_MAX ? userAgent.slice(0, USER_AGENT_MAX) : userAgent;
    if (row === undefined) {
      this.#rows.set(key, { firstSeen: at, lastSeen: at, calls: 1, lastUserAgent: agent });
      return;
    }
    row.calls++;
    // Aggregated logs are not in order: first and last seen are a minimum and a maximum.
    if (at < row.firstSeen) row.firstSeen = at;
    if (at >= row.lastSeen) {
      row.lastSeen = at;
      row.lastUserAgent = agent;
    }
  }

  /** The report as of `now`, with a section for every given operation and any other seen. */
  report(facts: readonly DeprecatedOperationFacts[], now: number): DeprecationReport {
    const callers = new Map<string, CallerRow[]>();
    for (const [key, row] of this.#rows.entries()) {
      const split = key.indexOf("\u0000");
      const operation = key.slice(0, split);
      const list = callers.get(operation) ?? [];
      list.push({
        consumer: key.slice(split + 1),
        firstSeen: iso(row.firstSeen),
        lastSeen: iso(row.lastSeen),
        calls: row.calls,
        lastUserAgent: row.lastUserAgent,
      });
      callers.set(operation, list);
    }
    for (const list of callers.values()) list.sort(byRecency);
    return this.#assemble(facts, now, this.#totals, callers);
  }

  /**
   * The report as of `now`, built in slices so that a tally of many callers never holds the loop
   * for long; callers in no particular order (the ops port sorts what it shows). The rows are
   * copied as references in one step (about 1 ms per 10,000), since the tally may change between
   * slices; a row's figures are read in its slice.
   */
  async snapshot(
    facts: readonly DeprecatedOperationFacts[],
    now: number,
    work: Slices = slices(),
  ): Promise<DeprecationReport> {
    const keys: string[] = [];
    const entries: CallerEntry[] = [];
    for (const [key, row] of this.#rows.entries()) {
      keys.push(key);
      entries.push(row);
    }
    const totals = new Map(
      [...this.#totals].map(([operation, { calls, forgotten }]) => [operation, { calls, forgotten }]),
    );
    const callers = new Map<string, CallerRow[]>();
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      const row = entries[i] as CallerEntry;
      const split = key.indexOf("\u0000");
      const operation = key.slice(0, split);
      let list = callers.get(operation);
      if (list === undefined) {
        list = [];
        callers.set(operation, list);
      }
      list.push({
        consumer: key.slice(split + 1),
        firstSeen: iso(row.firstSeen),
        lastSeen: iso(row.lastSeen),
        calls: row.calls,
        lastUserAgent: row.lastUserAgent,
      });
      if (work.due()) await work.next();
    }
    return this.#assemble(facts, now, totals, callers);
  }

  #assemble(
    facts: readonly DeprecatedOperationFacts[],
    now: number,
    totals: ReadonlyMap<string, OperationTotals>,
    callers: ReadonlyMap<string, CallerRow[]>,
  ): DeprecationReport {
    const known = new Map(facts.map((fact) => [fact.operation, fact]));
    const names = [...known.keys(), ...[...totals.keys()].filter((name) => !known.has(name))];
    const generatedAt = iso(now);
    return {
      generatedAt,
      operations: names.map((operation) => {
        const fact = known.get(operation);
        const counted = totals.get(operation);
        const sunset = fact?.sunset === undefined ? null : iso(fact.sunset);
        return {
          operation,
          method: fact?.method ?? "",
          path: fact?.path ?? "",
          since: fact?.since === undefined ? null : iso(fact.since),
          sunset,
          successor: fact?.successor ?? null,
          daysToSunset: daysBetween(generatedAt, sunset),
          calls: counted?.calls ?? 0,
          forgottenCallers: counted?.forgotten ?? 0,
          callers: callers.get(operation) ?? [],
        };
      }),
    };
  }

  #totalsOf(operation: string): OperationTotals {
    let totals = this.#totals.get(operation);
    if (totals === undefined) {
      totals = { calls: 0, forgotten: 0 };
      this.#totals.set(operation, totals);
    }
    return totals;
  }
}

/**
 * Several processes' parts into one: calls and forgotten rows add up, first seen is the earliest,
 * last seen the latest (with that process's user agent). Merging one part returns it unchanged.
 */
export function mergeReports(parts: readonly DeprecationReport[]): DeprecationReport {
  if (parts.length === 1) return parts[0] as DeprecationReport;
  if (parts.length === 0) return { generatedAt: new Date().toISOString(), operations: [] };
  let generatedAt = "";
  let countingSince: string | undefined;
  const operations = new Map<string, { report: OperationReport; callers: Map<string, CallerRow> }>();
  for (const part of parts) {
    if (part.generatedAt > generatedAt) generatedAt = part.generatedAt;
    const since = part.countingSince;
    if (since !== undefined && (countingSince === undefined || since < countingSince)) countingSince = since;
    for (const section of part.operations) {
      const merged = operations.get(section.operation);
      if (merged === undefined) {
        operations.set(section.operation, {
          report: section,
          callers: new Map(section.callers.map((row) => [row.consumer, row])),
        });
        continue;
      }
      merged.report = {
        ...(merged.report.path === "" ? section : merged.report),
        calls: merged.report.calls + section.calls,
        forgottenCallers: merged.report.forgottenCallers + section.forgottenCallers,
      };
      for (const row of section.callers) {
        const seen = merged.callers.get(row.consumer);
        merged.callers.set(
          row.consumer,
          seen === undefined
            ? row
            : {
                consumer: row.consumer,
                firstSeen: row.firstSeen < seen.firstSeen ? row.firstSeen : seen.firstSeen,
                lastSeen: row.lastSeen > seen.lastSeen ? row.lastSeen : seen.lastSeen,
                calls: seen.calls + row.calls,
                lastUserAgent: row.lastSeen > seen.lastSeen ? row.lastUserAgent : seen.lastUserAgent,
              },
        );
      }
    }
  }
  return {
    generatedAt,
    ...(countingSince === undefined ? {} : { countingSince }),
    operations: [...operations.values()].map(({ report, callers }) => ({
      ...report,
      daysToSunset: daysBetween(generatedAt, report.sunset),
      callers: sortCallers([...callers.values()]),
    })),
  };
}

function sortCallers(rows: CallerRow[]): CallerRow[] {
  return rows.sort(byRecency);
}

/** The report's order of callers: most recently seen first, then by name. */
export function byRecency(a: CallerRow, b: CallerRow): number {
  if (a.lastSeen !== b.lastSeen) return a.lastSeen > b.lastSeen ? -1 : 1;
  return a.consumer < b.consumer ? -1 : a.consumer > b.consumer ? 1 : 0;
}

export function daysBetween(from: string, to: string | null): number | null {
  if (to === null) return null;
  return daysFrom(Date.parse(from), Date.parse(to));
}

/** Whole days from one instant (ms) to another, a part of a day counted as one: the report's days to sunset. */
export function daysFrom(from: number, to: number): number {
  // +0 turns the -0 of Math.ceil(-0.5) into 0.
  return Math.ceil((to - from) / DAY_MS) + 0;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

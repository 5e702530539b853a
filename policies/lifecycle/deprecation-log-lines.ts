// The fleet-wide report's input: every replica writes one deprecated-call line per call, so
// the aggregated logs of all of them say what no single process's /deprecations can.
import { logEntry } from "../../src/log-lines.ts";
import { type CallerTally, DAY_MS, DEPRECATED_CALL_MSG } from "./deprecation-report.ts";

/**
 * Feeds one log line to the tally when it is a deprecated-call line; anything else (other
 * messages, a collector's prefix before the JSON, broken lines) is skipped. Returns whether it counted.
 */
export function recordLogLine(tally: CallerTally, line: string, daily?: DailyCalls): boolean {
  const entry = logEntry(line, DEPRECATED_CALL_MSG);
  if (entry === undefined) return false;
  const { operation, consumer, calledAt, userAgent } = entry;
  if (typeof operation !== "string" || typeof consumer !== "string") return false;
  const at = typeof calledAt === "string" ? Date.parse(calledAt) : Number.NaN;
  if (Number.isNaN(at)) return false;
  tally.record(operation, consumer, at, typeof userAgent === "string" ? userAgent : "");
  daily?.record(operation, consumer, at);
  return true;
}

/** The days the HTML page draws a bar for, the day of the report's instant the last of them. */
export const DAYS_SHOWN = 30;

/** Calls per UTC day of the last DAYS_SHOWN days, by operation and consumer: the page's bars. */
export interface DailyCallsView {
  /** The first day shown, YYYY-MM-DD. */
  readonly firstDay: string;
  /** operation -> consumer -> DAYS_SHOWN counts, oldest day first. */
  readonly counts: ReadonlyMap<string, ReadonlyMap<string, readonly number[]>>;
}

/**
 * Counts calls by day from calledAt. Only the log command keeps these: a gateway keeps no
 * history per day, so the ops page draws no day bars.
 */
export class DailyCalls {
  readonly #firstDay: number;
  readonly #end: number;
  readonly #counts = new Map<string, Map<string, number[]>>();

  /** The DAYS_SHOWN days up to and including `now`'s (UTC); later calls are not drawn. */
  constructor(now: number) {
    this.#end = now;
    this.#firstDay = now - (now % DAY_MS) - (DAYS_SHOWN - 1) * DAY_MS;
  }

  record(operation: string, consumer: string, at: number): void {
    if (at < this.#firstDay || at > this.#end) return;
    let byConsumer = this.#counts.get(operation);
    if (byConsumer === undefined) {
      byConsumer = new Map();
      this.#counts.set(operation, byConsumer);
    }
    let days = byConsumer.get(consumer);
    if (days === undefined) {
      days = new Array<number>(DAYS_SHOWN).fill(0);
      byConsumer.set(consumer, days);
    }
    const day = Math.floor((at - this.#firstDay) / DAY_MS);
    days[day] = (days[day] ?? 0) + 1;
  }

  view(): DailyCallsView {
    return { firstDay: new Date(this.#firstDay).toISOString().slice(0, 10), counts: this.#counts };
  }
}

// The fleet-wide report's input: every replica writes one deprecated-call line per call, so
// the aggregated logs of all of them say what no single process's /deprecations can.
import { LRUCache } from "lru-cache";
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
 * history per day, so the ops page draws no day bars. With `maxCallers`, the (operation,
 * consumer) rows not seen for longest are dropped past that many, as the tally drops its rows.
 */
export class DailyCalls {
  readonly #firstDay: number;
  readonly #end: number;
  readonly #counts: Map<string, number[]> | LRUCache<string, number[]>;

  /** The DAYS_SHOWN days up to and including `now`'s (UTC); later calls are not drawn. */
  constructor(now: number, maxCallers?: number) {
    this.#end = now;
    this.#firstDay = now - (now % DAY_MS) - (DAYS_SHOWN - 1) * DAY_MS;
    this.#counts = maxCallers === undefined ? new Map() : new LRUCache({ max: maxCallers });
  }

  record(operation: string, consumer: string, at: number): void {
    if (at < this.#firstDay || at > this.#end) return;
    const key = `${operation}\u0000${consumer}`;
    let days = this.#counts.get(key);
    if (days === undefined) {
      days = new Array<number>(DAYS_SHOWN).fill(0);
      this.#counts.set(key, days);
    }
    const day = Math.floor((at - this.#firstDay) / DAY_MS);
    days[day] = (days[day] ?? 0) + 1;
  }

  view(): DailyCallsView {
    const counts = new Map<string, Map<string, readonly number[]>>();
    for (const [key, days] of this.#counts.entries()) {
      const split = key.indexOf("\u0000");
      const operation = key.slice(0, split);
      let byConsumer = counts.get(operation);
      if (byConsumer === undefined) {
        byConsumer = new Map();
        counts.set(operation, byConsumer);
      }
      byConsumer.set(key.slice(split + 1), days);
    }
    return { firstDay: new Date(this.#firstDay).toISOString().slice(0, 10), counts };
  }
}

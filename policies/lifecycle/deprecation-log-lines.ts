// The fleet-wide report's input: every replica writes one deprecated-call line per call, so
// the aggregated logs of all of them say what no single process's /deprecations can.
import { LRUCache } from "lru-cache";
import { logEntry } from "../../src/log-lines.ts";
import { type CallerTally, DAY_MS, DEPRECATED_CALL_MSG } from "./deprecation-report.ts";

/**
 * Feeds one log line to the tally when it is a deprecated-call line; anything else (other
 * messages, a collector's prefix before the JSON, broken lines) is skipped. Returns the call's
 * instant when it counted, else undefined.
 */
export function recordLogLine(tally: CallerTally, line: string, daily?: DailyCalls): number | undefined {
  const entry = logEntry(line, DEPRECATED_CALL_MSG);
  if (entry === undefined) return undefined;
  const { operation, consumer, calledAt, userAgent } = entry;
  if (typeof operation !== "string" || typeof consumer !== "string") return undefined;
  const at = typeof calledAt === "string" ? Date.parse(calledAt) : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  tally.record(operation, consumer, at, typeof userAgent === "string" ? userAgent : "");
  daily?.record(operation, consumer, at);
  return at;
}

// pino writes `"time":"<ISO>"` right after the level: the first such key after the line's `{` is
// the line's own (a quote inside a JSON string is escaped, so a client's text cannot forge it).
const TIME_KEY = '"time":"';
const ISO_LENGTH = "2030-11-20T12:00:00.000Z".length;

/** The instant pino wrote on a log line, without parsing the rest of it; undefined without one. */
export function lineTime(line: string): number | undefined {
  const start = line.indexOf("{");
  if (start === -1) return undefined;
  const key = line.indexOf(TIME_KEY, start);
  if (key === -1) return undefined;
  const from = key + TIME_KEY.length;
  const end = line.indexOf('"', from);
  if (end === -1 || end - from > ISO_LENGTH) return undefined;
  const at = Date.parse(line.slice(from, end));
  return Number.isNaN(at) ? undefined : at;
}

/**
 * The first and last instant of the lines read: every line's pino time and every call's
 * calledAt. A consumer silent at the end of the logs is quiet as of their end, not as of --now:
 * logs that end two years ago say nothing about the two years since.
 */
export class LogSpan {
  #first = Number.POSITIVE_INFINITY;
  #last = Number.NEGATIVE_INFINITY;

  see(at: number): void {
    if (at < this.#first) this.#first = at;
    if (at > this.#last) this.#last = at;
  }

  /** ISO instants; undefined when no line carried one. */
  view(): { readonly from: string; readonly to: string } | undefined {
    if (this.#first > this.#last) return undefined;
    return { from: new Date(this.#first).toISOString(), to: new Date(this.#last).toISOString() };
  }
}

/** The days the HTML page draws a bar for, the last day of the logs (at most the report's) the last of them. */
export const DAYS_SHOWN = 30;

/** Calls per UTC day of the last DAYS_SHOWN days of the logs, by operation and consumer: the page's bars. */
export interface DailyCallsView {
  /** The first day shown, YYYY-MM-DD. */
  readonly firstDay: string;
  /** The last day shown, YYYY-MM-DD: the logs' last day, or the report's when that is earlier. */
  readonly lastDay: string;
  /** operation -> consumer -> DAYS_SHOWN counts, oldest day first. */
  readonly counts: ReadonlyMap<string, ReadonlyMap<string, readonly number[]>>;
}

/** One row's counts and the last day (in days since the epoch) they end at. */
interface DayRow {
  lastDay: number;
  readonly days: number[];
}

/**
 * Counts calls by day from calledAt. Only the log command keeps these: a gateway keeps no
 * history per day, so the ops page draws no day bars. With `maxCallers`, the (operation,
 * consumer) rows not seen for longest are dropped past that many, as the tally drops its rows.
 *
 * The days shown end at the last day of the logs, which is known only once every line is read
 * (they come in any order): each row is shifted to the latest last day when it is next touched.
 * The last day only moves later, so a call that falls before the window when it is read falls
 * before the final one too: nothing drawn is lost, and each row stays DAYS_SHOWN counts.
 */
export class DailyCalls {
  readonly #end: number;
  #lastDay: number | undefined;
  readonly #counts: Map<string, DayRow> | LRUCache<string, DayRow>;

  /** Calls after `now` are not drawn; without any line, the days shown end at `now`'s (UTC). */
  constructor(now: number, maxCallers?: number) {
    this.#end = now;
    this.#counts = maxCallers === undefined ? new Map() : new LRUCache({ max: maxCallers });
  }

  /** An instant of the logs (any line's): the days shown end at the latest one, up to `now`. */
  see(at: number): void {
    if (at > this.#end) return;
    const day = Math.floor(at / DAY_MS);
    if (this.#lastDay === undefined || day > this.#lastDay) this.#lastDay = day;
  }

  record(operation: string, consumer: string, at: number): void {
    this.see(at);
    const lastDay = this.#lastDay;
    const day = Math.floor(at / DAY_MS);
    if (at > this.#end || lastDay === undefined || day <= lastDay - DAYS_SHOWN) return;
    const key = `${operation}\u0000${consumer}`;
    let row = this.#counts.get(key);
    if (row === undefined) {
      row = { lastDay, days: new Array<number>(DAYS_SHOWN).fill(0) };
      this.#counts.set(key, row);
    }
    this.#align(row, lastDay);
    const index = DAYS_SHOWN - 1 - (lastDay - day);
    row.days[index] = (row.days[index] ?? 0) + 1;
  }

  view(): DailyCallsView {
    const lastDay = this.#lastDay ?? Math.floor(this.#end / DAY_MS);
    const counts = new Map<string, Map<string, readonly number[]>>();
    for (const [key, row] of this.#counts.entries()) {
      this.#align(row, lastDay);
      const split = key.indexOf("\u0000");
      const operation = key.slice(0, split);
      let byConsumer = counts.get(operation);
      if (byConsumer === undefined) {
        byConsumer = new Map();
        counts.set(operation, byConsumer);
      }
      byConsumer.set(key.slice(split + 1), row.days);
    }
    return { firstDay: dayText(lastDay - DAYS_SHOWN + 1), lastDay: dayText(lastDay), counts };
  }

  /** Moves a row's counts to end at `lastDay`: the days that fall out of the window are dropped. */
  #align(row: DayRow, lastDay: number): void {
    const shift = lastDay - row.lastDay;
    if (shift <= 0) return;
    if (shift >= DAYS_SHOWN) row.days.fill(0);
    else row.days.copyWithin(0, shift).fill(0, DAYS_SHOWN - shift);
    row.lastDay = lastDay;
  }
}

function dayText(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

// The fleet's usage from the logs: every replica writes "usage" lines (the calls since its last
// ones), so summing the lines of all of them gives what no single process's /usage can.
import { LRUCache } from "lru-cache";
import { logEntry } from "../../src/log-lines.ts";
import { mergeRow, rowKey, type UsageRow } from "./usage-memory.ts";

/** The log line's message (policies/usage/index.ts writes it). */
export const USAGE_MSG = "usage";

const strings = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === "string");

/** The usage row a log line carries; undefined for any other line or a malformed one. */
export function usageRowOf(line: string): UsageRow | undefined {
  const entry = logEntry(line, USAGE_MSG);
  if (entry === undefined) return undefined;
  const { consumer, operation, calls, firstSeen, lastSeen, parameters, values, statuses } = entry;
  // Lines written before members were recorded have none.
  const members = entry.members ?? [];
  const memberValues = entry.memberValues ?? {};
  const sampled = entry.sampled ?? 0;
  const answerMembers = entry.answerMembers ?? {};
  if (typeof sampled !== "number" || !Number.isSafeInteger(sampled) || sampled < 0) return undefined;
  if (typeof consumer !== "string" || typeof operation !== "string") return undefined;
  if (typeof calls !== "number" || !Number.isSafeInteger(calls) || calls < 0) return undefined;
  if (typeof firstSeen !== "string" || typeof lastSeen !== "string") return undefined;
  if (!strings(parameters) || !strings(statuses)) return undefined;
  if (!strings(members)) return undefined;
  const listsOf = (value: unknown) =>
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? Object.entries(value as Record<string, unknown>)
      : undefined;
  const lists = listsOf(values);
  const memberLists = listsOf(memberValues);
  const answerLists = listsOf(answerMembers);
  if (answerLists === undefined || !answerLists.every(([, list]) => strings(list))) return undefined;
  if (lists === undefined || !lists.every(([, list]) => strings(list))) return undefined;
  if (memberLists === undefined || !memberLists.every(([, list]) => strings(list))) return undefined;
  return {
    consumer,
    operation,
    calls,
    firstSeen,
    lastSeen,
    parameters,
    values: Object.fromEntries(lists) as Record<string, string[]>,
    statuses,
    members,
    memberValues: Object.fromEntries(memberLists) as Record<string, string[]>,
    sampled,
    answerMembers: Object.fromEntries(answerLists) as Record<string, string[]>,
  };
}

/** Usage lines merged per consumer and operation, at most `maxRows` kept (least recently read dropped, counted). */
export class UsageTally {
  readonly #rows: LRUCache<string, UsageRow>;
  #forgotten = 0;

  constructor(maxRows: number) {
    this.#rows = new LRUCache({
      max: maxRows,
      dispose: (_row, _key, reason) => {
        if (reason === "evict") this.#forgotten++;
      },
    });
  }

  /** True when the line was a usage line. */
  readLine(line: string): boolean {
    const row = usageRowOf(line);
    if (row === undefined) return false;
    const key = rowKey(row);
    this.#rows.set(key, mergeRow(this.#rows.get(key), row));
    return true;
  }

  get forgotten(): number {
    return this.#forgotten;
  }

  /** By operation, then consumer. */
  rows(): UsageRow[] {
    return [...this.#rows.values()].sort(
      (a, b) =>
        (a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : 0) ||
        (a.consumer < b.consumer ? -1 : a.consumer > b.consumer ? 1 : 0),
    );
  }
}

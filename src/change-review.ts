// Who a candidate document would break, from the traffic the gateway logged: each difference
// between the running document and the candidate (document-diff.ts) is matched against the
// access lines ("msg":"request", one per request, every replica's) to name the consumers whose
// calls it breaks. The lines say the operation, the status, the consumer and the query string, so
// an operation, a status or a query parameter is attributed to the calls that used it; what the
// lines do not hold (request-body members, response members, path values) is said "not
// recorded", with the operation's callers, who may rely on it.
//
// The usage policy's log lines ("usage": per consumer and operation, the calls, the query names
// and enum values sent, the statuses received) say the same in far fewer lines: when the logs
// hold no access line in the window, the review reads those instead.
//
// Read the same bounded, linear way as the deprecation report: one pass over the lines, each
// parsed once, and per breaking change at most `maxConsumers` consumers kept (the least recently
// seen forgotten, and counted).
import { LRUCache } from "lru-cache";
import type { AlternativeMarks, DocumentDifference } from "./document-diff.ts";
import { logEntry } from "./log-lines.ts";
import type { ApiDescription, Operation, ParameterSpec } from "./openapi.ts";
import { checkParameter } from "./parameters.ts";
import { parseQuery } from "./pipeline/canonical-request.ts";

export const DAY_MS = 86_400_000;
/** The access line's message (docs/logs.md). */
const ACCESS_MSG = "request";
/** The consumer shown for calls no consumer was authenticated for (a public operation's). */
export const NO_CONSUMER = "(no consumer)";

/**
 * How far the lines see a change: `calls`, the calls it breaks are told apart by what the line
 * holds; `callers`, the line does not hold the part that changes, so every caller of the
 * operation is named as one who may rely on it; `received`, usage lines name who received the
 * member on the answers sampled, and who had no answer sampled (of whom nothing is known).
 */
export type Attribution = "calls" | "callers" | "received";

export interface ConsumerUse {
  readonly consumer: string;
  readonly calls: number;
  /** Epoch milliseconds of the last such call read. */
  readonly lastSeen: number;
}

/** One consumer's use of one operation as a usage log line records it (policies/usage). */
export interface RecordedUsage {
  readonly consumer: string;
  readonly operation: string;
  readonly calls: number;
  /** Epoch milliseconds. */
  readonly lastSeen: number;
  /** Query parameters the document declares that it sent, in the document's order. */
  readonly parameters: readonly string[];
  /** For an enum query parameter, the values of the enum it sent. */
  readonly values: Readonly<Record<string, readonly string[]>>;
  /** The responses it received, as the document writes them ("200", "4XX", "default"). */
  readonly statuses: readonly string[];
  /** JSON request-body members sent, as pointers into the schema. */
  readonly members: readonly string[];
  /** For an enum member, the values sent, by pointer. */
  readonly memberValues: Readonly<Record<string, readonly string[]>>;
  /** Answers whose members were read: 0, nothing is known of what it received. */
  readonly sampled: number;
  /** Members present on the sampled answers, as pointers, by the response as written. */
  readonly answerMembers: Readonly<Record<string, readonly string[]>>;
}

export interface ReviewedChange extends DocumentDifference {
  /** Breaking changes only: whom the logs show it breaks. */
  readonly usage?: {
    readonly attribution: Attribution;
    /** Most calls first. */
    readonly consumers: readonly ConsumerUse[];
    /**
     * Consumers dropped past the bound (one that comes back and is dropped again counts again):
     * when above 0, more consumers used it than `consumers` shows, and their counts are low.
     */
    readonly forgotten: number;
  };
}

export interface ChangeReview {
  readonly running: string;
  readonly candidate: string;
  /** The instant the window ends at and "days ago" is counted from. */
  readonly now: number;
  /** The window of log lines read: the `days` before `now`. */
  readonly days: number;
  /** What was read; undefined when no logs were given. */
  readonly logs:
    | {
        readonly lines: number;
        /** Lines too long to be the gateway's, skipped unread (src/log-lines.ts). */
        readonly skippedLines: number;
        /** Access lines within the window. */
        readonly calls: number;
        /** Usage lines within the window (read for the review when no access line is). */
        readonly usageLines: number;
        readonly from: number | undefined;
        readonly to: number | undefined;
      }
    | undefined;
  /** Breaking first (document-diff's order). */
  readonly changes: readonly ReviewedChange[];
}

/** One access line as the review reads it. */
interface Call {
  readonly operation: string;
  readonly status: number | undefined;
  readonly consumer: string;
  readonly at: number;
  /**
   * The query as the gateway parses it (empty without one); undefined when the gateway refused
   * it (a duplicate, bad percent-encoding): such a call never reached the parameters, and a
   * candidate does not change its fate.
   */
  readonly query: ReadonlyMap<string, string> | undefined;
}

interface Probe {
  readonly attribution: Attribution;
  matches(call: Call): boolean;
  readonly seen: Tally;
  readonly rows: RowMatcher;
  readonly rowsSeen: Tally;
}

/** Calls and last seen by consumer, at most so many consumers. */
class Tally {
  readonly #max: number;
  readonly #seen: LRUCache<string, { calls: number; lastSeen: number }>;
  forgotten = 0;

  constructor(max: number) {
    this.#max = max;
    this.#seen = new LRUCache({ max });
  }

  add(consumer: string, calls: number, at: number): void {
    const held = this.#seen.get(consumer);
    if (held !== undefined) {
      held.calls += calls;
      if (at > held.lastSeen) held.lastSeen = at;
      return;
    }
    if (this.#seen.size >= this.#max) this.forgotten++;
    this.#seen.set(consumer, { calls, lastSeen: at });
  }

  /** Most calls first, then the most recently seen. */
  consumers(): ConsumerUse[] {
    return [...this.#seen.entries()]
      .map(([consumer, { calls, lastSeen }]) => ({ consumer, calls, lastSeen }))
      .sort((a, b) => b.calls - a.calls || b.lastSeen - a.lastSeen || (a.consumer < b.consumer ? -1 : 1));
  }
}

export interface ReviewOptions {
  readonly running: { readonly name: string; readonly api: ApiDescription };
  readonly candidate: { readonly name: string; readonly api: ApiDescription };
  readonly differences: readonly DocumentDifference[];
  readonly now: number;
  readonly days: number;
  /** Consumers kept per breaking change. */
  readonly maxConsumers: number;
}

/** Feed it the log lines (`readLine`), then ask for the review. */
export class ChangeReviewer {
  readonly #options: ReviewOptions;
  readonly #probes: (Probe | undefined)[];
  readonly #since: number;
  #lines = 0;
  #skippedLines = 0;
  #calls = 0;
  #usageLines = 0;
  #from = Number.POSITIVE_INFINITY;
  #to = Number.NEGATIVE_INFINITY;
  #read = false;
  /** Whether any breaking change reads the query: only then is it parsed. */
  readonly #needsQuery: boolean;

  constructor(options: ReviewOptions) {
    this.#options = options;
    this.#since = options.now - options.days * DAY_MS;
    const running = new Map(options.running.api.operations.map((o) => [o.id, o] as const));
    const candidate = new Map(
      options.candidate.api.operations.map((o) => [`${o.method} ${o.path}`, o] as const),
    );
    let needsQuery = false;
    this.#probes = options.differences.map((difference) => {
      if (!difference.breaking) return undefined;
      const old = difference.operation === undefined ? undefined : running.get(difference.operation);
      const now = old === undefined ? undefined : candidate.get(`${old.method} ${old.path}`);
      const rule = matcherOf(difference, old, now);
      if (rule.readsQuery) needsQuery = true;
      return {
        attribution: rule.attribution,
        matches: rule.matches,
        seen: new Tally(options.maxConsumers),
        rows: rowMatcherOf(difference, old, now),
        rowsSeen: new Tally(options.maxConsumers),
      };
    });
    this.#needsQuery = needsQuery;
  }

  /** One log line: an access line within the window counts, anything else is skipped. */
  readLine(line: string): void {
    this.#read = true;
    this.#lines++;
    const entry = logEntry(line, ACCESS_MSG);
    if (entry === undefined) return;
    const { operation, time, status, consumer, path } = entry;
    if (typeof operation !== "string" || typeof time !== "string") return;
    const at = Date.parse(time);
    if (Number.isNaN(at) || at < this.#since || at > this.#options.now) return;
    this.#calls++;
    if (at < this.#from) this.#from = at;
    if (at > this.#to) this.#to = at;
    const call: Call = {
      operation,
      status: typeof status === "number" ? status : undefined,
      consumer: typeof consumer === "string" ? consumer : NO_CONSUMER,
      at,
      query: this.#needsQuery && typeof path === "string" ? queryOf(path) : NO_QUERY,
    };
    for (const probe of this.#probes) {
      if (probe?.matches(call)) probe?.seen.add(call.consumer, 1, at);
    }
  }

  /** One usage line (parsed by the caller): counted when its last call is within the window. */
  readUsage(row: RecordedUsage): void {
    this.#read = true;
    this.#lines++;
    if (row.lastSeen < this.#since || row.lastSeen > this.#options.now) return;
    this.#usageLines++;
    if (row.lastSeen < this.#from) this.#from = row.lastSeen;
    if (row.lastSeen > this.#to) this.#to = row.lastSeen;
    for (const probe of this.#probes) {
      if (probe?.rows.matches(row)) probe.rowsSeen.add(row.consumer, row.calls, row.lastSeen);
    }
  }

  /** Lines the reader skipped unread, too long to be the gateway's: said, so that none is lost silently. */
  skippedLines(count: number): void {
    this.#skippedLines += count;
  }

  /** Logs were given (even empty ones): the review says who, not only what. */
  markLogsGiven(): void {
    this.#read = true;
  }

  review(): ChangeReview {
    const { running, candidate, differences, now, days } = this.#options;
    // Access lines say each call; usage lines only when the logs hold none in the window, but
    // for request-body members, which only usage lines hold.
    const usageOnly = this.#calls === 0 && this.#usageLines > 0;
    const changes = differences.map((difference, index): ReviewedChange => {
      const probe = this.#probes[index];
      if (probe === undefined || !this.#read) return difference;
      const fromUsage = usageOnly || (probe.rows.members === true && this.#usageLines > 0);
      const tally = fromUsage ? probe.rowsSeen : probe.seen;
      const attribution = fromUsage ? probe.rows.attribution : probe.attribution;
      return {
        ...difference,
        usage: { attribution, consumers: tally.consumers(), forgotten: tally.forgotten },
      };
    });
    return {
      running: running.name,
      candidate: candidate.name,
      now,
      days,
      logs: this.#read
        ? {
            lines: this.#lines,
            skippedLines: this.#skippedLines,
            calls: this.#calls,
            usageLines: this.#usageLines,
            from: this.#from > this.#to ? undefined : this.#from,
            to: this.#from > this.#to ? undefined : this.#to,
          }
        : undefined,
      changes,
    };
  }
}

/**
 * The command's exit code: 0 when nothing used breaks, 1 when something used breaks, and 1
 * whenever something breaks and no logs were read (nobody can say it is unused).
 */
export function reviewExitCode(review: ChangeReview): 0 | 1 {
  const breaking = review.changes.filter((change) => change.breaking);
  if (breaking.length === 0) return 0;
  if (review.logs === undefined) return 1;
  return breaking.some((change) => (change.usage?.consumers.length ?? 0) > 0) ? 1 : 0;
}

const NO_QUERY: ReadonlyMap<string, string> = new Map();

function queryOf(path: string): ReadonlyMap<string, string> | undefined {
  const start = path.indexOf("?");
  if (start === -1) return NO_QUERY;
  const query = new Map<string, string>();
  // The gateway's own parser: a query it refused never reached an operation's parameters.
  return parseQuery(path.slice(start + 1), query) === undefined ? query : undefined;
}

interface Matcher {
  readonly attribution: Attribution;
  readonly readsQuery: boolean;
  matches(call: Call): boolean;
}

const QUERY_PARAMETER = "query parameter ";

/** Which calls a breaking difference breaks, as far as an access line tells. */
function matcherOf(
  difference: DocumentDifference,
  old: Operation | undefined,
  now: Operation | undefined,
): Matcher {
  const id = difference.operation;
  const ofOperation = (call: Call) => call.operation === id;
  const calls = (matches: (call: Call) => boolean): Matcher => ({
    attribution: "calls",
    readsQuery: false,
    matches,
  });
  const callers: Matcher = { attribution: "callers", readsQuery: false, matches: ofOperation };
  // Every URL moves: every call that reached an operation.
  if (difference.kind === "base-path-changed") return calls((call) => call.operation !== "unmatched");
  if (old === undefined) return calls(ofOperation);
  const location = difference.location ?? "";
  if (location.startsWith(QUERY_PARAMETER)) {
    const name = location.slice(QUERY_PARAMETER.length);
    const before = old.queryParameters.get(name);
    const after = now?.queryParameters.get(name);
    return {
      attribution: "calls",
      readsQuery: true,
      matches: queryMatcher(difference, id, name, before, after),
    };
  }
  switch (difference.kind) {
    case "operation-removed":
    case "security-strengthened":
    case "sunset-earlier":
    // Every caller may meet the new status: one that switches over those it was told of breaks.
    case "status-added":
      return calls(ofOperation);
    // A status removed: who received it. An alternative added to an answer: who receives that
    // answer, and may meet the new shape.
    case "status-removed":
    case "alternative-added": {
      if (!location.startsWith(RESPONSE)) return callers;
      const written = location.slice(RESPONSE.length).toUpperCase();
      const others = [...old.responses.keys()].map((s) => s.toUpperCase()).filter((s) => s !== written);
      return calls((call) => ofOperation(call) && statusMatches(call.status, written, others));
    }
    default:
      // A request body, a response's members, a path parameter's values: not on the access line.
      return callers;
  }
}

function queryMatcher(
  difference: DocumentDifference,
  id: string | undefined,
  name: string,
  before: ParameterSpec | undefined,
  after: ParameterSpec | undefined,
): (call: Call) => boolean {
  const ofOperation = (call: Call) => call.operation === id;
  switch (difference.kind) {
    case "parameter-removed":
      return (call) => ofOperation(call) && call.query?.has(name) === true;
    case "parameter-made-required":
      return (call) => ofOperation(call) && call.query !== undefined && !call.query.has(name);
    default: {
      // A value the running document took and the candidate refuses, by the gateway's own check.
      if (before === undefined || after === undefined) return ofOperation;
      return (call) => {
        if (!ofOperation(call)) return false;
        const value = call.query?.get(name);
        if (value === undefined) return false;
        return checkParameter(before, value).ok && !checkParameter(after, value).ok;
      };
    }
  }
}

/** Whether a status answered falls under a response as the document writes it: "404", "4XX", "default". */
function statusMatches(status: number | undefined, written: string, others: readonly string[]): boolean {
  if (status === undefined) return false;
  const text = String(status);
  const covers = (key: string) =>
    key === text || (key.length === 3 && key.endsWith("XX") && key[0] === text[0]);
  if (written === "DEFAULT") return !others.some(covers);
  // "4XX" covers a 404 only when 404 is not written on its own.
  if (written.endsWith("XX") && others.includes(text)) return false;
  return covers(written);
}

interface RowMatcher {
  readonly attribution: Attribution;
  /** Request-body members: only usage lines hold them, so they are read even beside access lines. */
  readonly members?: boolean;
  matches(row: RecordedUsage): boolean;
}

const REQUEST_BODY = "request body ";
const RESPONSE = "response ";

/**
 * Which usage lines a breaking difference breaks: the same rules as matcherOf, over what a usage
 * line holds (names sent, enum values sent, statuses received, request-body members sent, no
 * single call's query).
 */
function rowMatcherOf(
  difference: DocumentDifference,
  old: Operation | undefined,
  now: Operation | undefined,
): RowMatcher {
  const id = difference.operation;
  const ofOperation = (row: RecordedUsage) => row.operation === id;
  const calls = (matches: (row: RecordedUsage) => boolean) => ({ attribution: "calls" as const, matches });
  if (difference.kind === "base-path-changed") return calls(() => true);
  if (old === undefined) return calls(ofOperation);
  const location = difference.location ?? "";
  const pointer = difference.pointer;
  if (difference.kind === "alternative-removed" && location.startsWith(REQUEST_BODY)) {
    return sentAlternative(id, difference.alternative);
  }
  if (difference.kind === "alternative-added" && location.startsWith(RESPONSE)) {
    const written = location.slice(RESPONSE.length);
    return calls((row) => ofOperation(row) && row.statuses.includes(written));
  }
  if (location.startsWith(REQUEST_BODY) && pointer !== undefined && pointer !== "") {
    const sent = (row: RecordedUsage) => ofOperation(row) && row.members.includes(pointer);
    switch (difference.kind) {
      case "member-removed":
        return { attribution: "calls", members: true, matches: sent };
      // A consumer that sent it every time is not told apart from one that sometimes did not.
      case "member-made-required":
        return {
          attribution: "callers",
          members: true,
          matches: (row) => ofOperation(row) && !row.members.includes(pointer),
        };
      case "enum-value-removed": {
        const text =
          typeof difference.value === "string" ? difference.value : JSON.stringify(difference.value);
        return {
          attribution: "calls",
          members: true,
          matches: (row) => ofOperation(row) && (row.memberValues[pointer] ?? []).includes(text),
        };
      }
      // A type, bound or pattern changed: the values are not recorded, whoever sent the member is named.
      default:
        return { attribution: "callers", members: true, matches: sent };
    }
  }
  if (
    difference.direction === "response" &&
    location.startsWith(RESPONSE) &&
    pointer !== undefined &&
    pointer !== ""
  ) {
    const written = location.slice(RESPONSE.length);
    // An answer not sampled says nothing: never "unused".
    return {
      attribution: "received",
      members: true,
      matches: (row) =>
        ofOperation(row) && (row.sampled === 0 || (row.answerMembers[written] ?? []).includes(pointer)),
    };
  }
  if (location.startsWith(QUERY_PARAMETER)) {
    const name = location.slice(QUERY_PARAMETER.length);
    const sent = (row: RecordedUsage) => ofOperation(row) && row.parameters.includes(name);
    if (difference.kind === "parameter-removed") return calls(sent);
    // A consumer that sent it every time is not told apart from one that sometimes did not.
    if (difference.kind === "parameter-made-required")
      return { attribution: "callers", matches: (row) => ofOperation(row) && !row.parameters.includes(name) };
    const before = old.queryParameters.get(name);
    const after = now?.queryParameters.get(name);
    // Values are recorded for enum parameters only: others name whoever sent the parameter.
    if (before === undefined || after === undefined || !Array.isArray(before.schema.enum))
      return { attribution: "callers", matches: sent };
    return calls(
      (row) =>
        ofOperation(row) &&
        (row.values[name] ?? []).some(
          (value) => checkParameter(before, value).ok && !checkParameter(after, value).ok,
        ),
    );
  }
  switch (difference.kind) {
    case "operation-removed":
    case "security-strengthened":
    case "sunset-earlier":
    case "status-added":
      return calls(ofOperation);
    case "status-removed": {
      const written = location.split(" ")[1] ?? "";
      return calls((row) => ofOperation(row) && row.statuses.includes(written));
    }
    default:
      return { attribution: "callers", matches: ofOperation };
  }
}

/**
 * Who sent a value of the alternative a candidate removes: a member only that alternative has, or
 * at a member the others share, a value only it takes. What marks none leaves the operation's
 * callers, who may have sent it.
 */
function sentAlternative(id: string | undefined, marks: AlternativeMarks | undefined): RowMatcher {
  const ofOperation = (row: RecordedUsage) => row.operation === id;
  const values = Object.entries(marks?.values ?? {});
  if (marks === undefined || (marks.members.length === 0 && values.length === 0))
    return { attribution: "callers", matches: ofOperation };
  return {
    attribution: "calls",
    members: true,
    matches: (row) =>
      ofOperation(row) &&
      (marks.members.some((member) => row.members.includes(member)) ||
        values.some(([member, only]) =>
          only.some((value) => (row.memberValues[member] ?? []).includes(value)),
        )),
  };
}

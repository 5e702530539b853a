// What each consumer relies on, per operation: its calls, first and last seen, the query
// parameters it sent (by name, and for an enum parameter the values), and the statuses it
// received. The change review asks it who a candidate document breaks.
//
// Held as bits over the document's own names, laid out once per operation: a consumer's row of
// an operation is a few counters and one small bitset, whatever it sends, and no text of a
// client's is kept (a value is only a bit when the document lists it). Consumers are kept least
// recently seen first out past a bound, and the evictions counted.
import { LRUCache } from "lru-cache";
import type { RecordedUsage } from "../../src/change-review.ts";
import { documentedResponseKey } from "../../src/openapi/documented-response.ts";
import type { ApiDescription, Operation } from "../../src/openapi.ts";
import { type MemberLayout, memberLayout, setSentMembers } from "./body-members.ts";

/**
 * One consumer's use of one operation, as the report and the log lines say it: the record the
 * change review reads (src/change-review.ts), with its instants as ISO text.
 */
export type UsageRow = Omit<RecordedUsage, "lastSeen"> & {
  /** ISO instants. */
  readonly firstSeen: string;
  readonly lastSeen: string;
};

/** Which bit says what, for one operation. */
interface Layout {
  readonly index: number;
  readonly id: string;
  /** A query parameter's name -> its bit, and for an enum its values' bits: one lookup per name sent. */
  readonly parameters: ReadonlyMap<
    string,
    { readonly bit: number; readonly values: ReadonlyMap<string, number> | undefined }
  >;
  /** Each response as the document writes it ("404", "4XX", "default") to its bit. */
  readonly statusBits: ReadonlyMap<string, number>;
  /** Bit -> what it names, to read a row back. */
  readonly names: readonly {
    readonly kind: "parameter" | "value" | "status" | "member" | "memberValue" | "answerMember";
    /** For an answer's member: the response as written. */
    readonly status?: string;
    readonly name: string;
    readonly value?: string;
  }[];
  /** The JSON request body's members, when the operation takes one. */
  readonly body: MemberLayout | undefined;
  /** Each response's JSON answer members, by the response as written. */
  readonly answers: ReadonlyMap<string, MemberLayout>;
  /** The response as written a status falls under ("404", else "4XX", else "default"). */
  readonly writtenOf: (status: number) => string | undefined;
  readonly words: number;
}

interface Row {
  calls: number;
  /** The first and last answers' instants (0 until the first answer). */
  first: number;
  last: number;
  /** Calls since the row was last written to the logs. */
  unlogged: number;
  /** Answers whose members were read. */
  sampled: number;
  readonly bits: Uint32Array;
}

type ConsumerRows = (Row | undefined)[];

/**
 * The consumers held, least recently seen dropped past the bound. The consumer of the last
 * request is kept aside: its next request (and the same request's next phase) finds its rows
 * without asking the cache, which is the order the cache already holds.
 */
class Consumers {
  readonly #operations: number;
  readonly #cache: LRUCache<string, ConsumerRows>;
  evicted = 0;
  #last: string | undefined;
  #lastRows: ConsumerRows = [];

  constructor(maxConsumers: number, operations: number) {
    this.#operations = operations;
    this.#cache = new LRUCache({
      max: maxConsumers,
      dispose: (_rows, _consumer, reason) => {
        if (reason === "evict") this.evicted++;
      },
    });
  }

  rowsOf(consumer: string): ConsumerRows {
    if (consumer === this.#last) return this.#lastRows;
    let rows = this.#cache.get(consumer);
    if (rows === undefined) {
      rows = new Array<Row | undefined>(this.#operations);
      // May evict the least recently seen, never this one: it is the most recent.
      this.#cache.set(consumer, rows);
    }
    this.#last = consumer;
    this.#lastRows = rows;
    return rows;
  }

  get size(): number {
    return this.#cache.size;
  }

  /** Most recently seen first. */
  entries(): [string, ConsumerRows][] {
    return [...this.#cache.entries()];
  }
}

/**
 * What one operation's calls record, bound to the operation's layout once (the policy's
 * forOperation): a request pays no lookup of its operation, and only an answer reads the clock.
 */
export class OperationUsage {
  readonly #layout: Layout;
  readonly #consumers: Consumers;

  constructor(layout: Layout, consumers: Consumers) {
    this.#layout = layout;
    this.#consumers = consumers;
  }

  /** The query a consumer sent to the operation, before any policy changed it. */
  sent(consumer: string, query: ReadonlyMap<string, string>): void {
    if (query.size === 0) return;
    const layout = this.#layout;
    const { bits } = this.#row(consumer);
    for (const [name, value] of query) {
      const parameter = layout.parameters.get(name);
      if (parameter === undefined) continue;
      set(bits, parameter.bit);
      const valueBit = parameter.values?.get(value);
      if (valueBit !== undefined) set(bits, valueBit);
    }
  }

  /** The JSON body a consumer sent to the operation (parsed here: not JSON, nothing is recorded). */
  sentBody(consumer: string, body: Buffer): void {
    const members = this.#layout.body;
    if (members === undefined || members.members.size === 0) return;
    let value: unknown;
    try {
      value = JSON.parse(body.toString("utf8"));
    } catch {
      return;
    }
    const { bits } = this.#row(consumer);
    setSentMembers(members, value, (bit) => set(bits, bit));
  }

  /** A JSON answer a consumer received, read on a sample: the members present on it. */
  receivedBody(consumer: string, status: number, text: string): void {
    const layout = this.#layout;
    const written = layout.writtenOf(status);
    const members = written === undefined ? undefined : layout.answers.get(written);
    if (members === undefined) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return;
    }
    const row = this.#row(consumer);
    row.sampled++;
    setSentMembers(members, value, (bit) => set(row.bits, bit));
  }

  /** One answer a consumer received from the operation: a call, at `at`. */
  answered(consumer: string, status: number, at: number): void {
    const layout = this.#layout;
    const row = this.#row(consumer);
    if (row.calls === 0) row.first = at;
    row.calls++;
    row.unlogged++;
    if (at > row.last) row.last = at;
    const written = layout.writtenOf(status);
    const bit = written === undefined ? undefined : layout.statusBits.get(written);
    if (bit !== undefined) set(row.bits, bit);
  }

  #row(consumer: string): Row {
    const rows = this.#consumers.rowsOf(consumer);
    const index = this.#layout.index;
    let row = rows[index];
    if (row === undefined) {
      row = {
        calls: 0,
        first: 0,
        last: 0,
        unlogged: 0,
        sampled: 0,
        bits: new Uint32Array(this.#layout.words),
      };
      rows[index] = row;
    }
    return row;
  }
}

export class UsageMemory {
  readonly #layouts: readonly Layout[];
  readonly #usages: ReadonlyMap<Operation, OperationUsage>;
  readonly #consumers: Consumers;
  readonly #since: number;

  constructor(api: ApiDescription, maxConsumers: number, now: number) {
    this.#layouts = api.operations.map((operation, index) => layoutOf(operation, index, api.schemas));
    this.#consumers = new Consumers(maxConsumers, api.operations.length);
    this.#usages = new Map(
      api.operations.map(
        (operation, index) =>
          [operation, new OperationUsage(this.#layouts[index] as Layout, this.#consumers)] as const,
      ),
    );
    this.#since = now;
  }

  /** What calls of one operation of the description record; undefined for another's. */
  of(operation: Operation): OperationUsage | undefined {
    return this.#usages.get(operation);
  }

  /** Consumers dropped past the bound since the start. */
  get evicted(): number {
    return this.#consumers.evicted;
  }

  get consumers(): number {
    return this.#consumers.size;
  }

  get countingSince(): number {
    return this.#since;
  }

  /**
   * Every row, most recently seen consumer first; with `unloggedOnly`, the rows with calls not yet
   * written to the logs, their calls counted from the last write (and marked written).
   */
  *rows(unloggedOnly = false): Generator<UsageRow> {
    const layouts = this.#layouts;
    // The consumers as they are now: a caller may pause between rows (slices) while calls go on.
    const consumers = this.#consumers.entries();
    for (const [consumer, rows] of consumers) {
      for (let index = 0; index < rows.length; index++) {
        const row = rows[index];
        const layout = layouts[index];
        if (row === undefined || layout === undefined || row.calls === 0) continue;
        if (unloggedOnly && row.unlogged === 0) continue;
        const calls = unloggedOnly ? row.unlogged : row.calls;
        if (unloggedOnly) row.unlogged = 0;
        yield rowOf(layout, consumer, row, calls);
      }
    }
  }
}

function set(bits: Uint32Array, bit: number): void {
  const word = bit >>> 5;
  bits[word] = (bits[word] as number) | (1 << (bit & 31));
}

function isSet(bits: Uint32Array, bit: number): boolean {
  return (((bits[bit >>> 5] as number) >>> (bit & 31)) & 1) === 1;
}

function layoutOf(operation: Operation, index: number, schemas: Readonly<Record<string, unknown>>): Layout {
  const names: Layout["names"][number][] = [];
  const parameters = new Map<string, { bit: number; values: Map<string, number> | undefined }>();
  for (const parameter of operation.queryParameters.values()) {
    const bit = names.length;
    names.push({ kind: "parameter", name: parameter.name });
    const listed = parameter.schema.enum;
    if (!Array.isArray(listed)) {
      parameters.set(parameter.name, { bit, values: undefined });
      continue;
    }
    // A value arrives as text: the enum's members as the query writes them.
    const bits = new Map<string, number>();
    for (const member of listed) {
      const text = typeof member === "string" ? member : JSON.stringify(member);
      if (bits.has(text)) continue;
      bits.set(text, names.length);
      names.push({ kind: "value", name: parameter.name, value: text });
    }
    parameters.set(parameter.name, { bit, values: bits });
  }
  const json = operation.requestBody?.content.find((entry) => entry.json);
  const body =
    json === undefined
      ? undefined
      : memberLayout(json.schema, schemas, (pointer, value) => {
          names.push(
            value === undefined
              ? { kind: "member", name: pointer }
              : { kind: "memberValue", name: pointer, value },
          );
          return names.length - 1;
        });
  const statusBits = new Map<string, number>();
  for (const written of operation.responses.keys()) {
    statusBits.set(written, names.length);
    names.push({ kind: "status", name: written });
  }
  const answers = new Map<string, MemberLayout>();
  for (const [written, response] of operation.responses) {
    if (response.mediaType === undefined || response.schema === undefined) continue;
    // Members only: the values of an answer are the backend's, not what a client relies on sending.
    const layout = memberLayout(response.schema, schemas, (pointer, value) => {
      if (value !== undefined) return undefined;
      names.push({ kind: "answerMember", name: pointer, status: written });
      return names.length - 1;
    });
    if (layout.members.size > 0) answers.set(written, layout);
  }
  // Looked up once per status (an answer's, 100 to 999), then read on every answer.
  const writtenByStatus: (string | null)[] = [];
  const writtenOf = (status: number) => {
    let written = writtenByStatus[status];
    if (written === undefined) {
      written = documentedResponseKey(operation.responses, status) ?? null;
      if (Number.isInteger(status) && status >= 100 && status < 1000) writtenByStatus[status] = written;
    }
    return written ?? undefined;
  };
  return {
    index,
    id: operation.id,
    parameters,
    statusBits,
    names,
    body,
    answers,
    writtenOf,
    words: Math.max(1, Math.ceil(names.length / 32)),
  };
}

function rowOf(layout: Layout, consumer: string, row: Row, calls: number): UsageRow {
  const parameters: string[] = [];
  const values: Record<string, string[]> = {};
  const statuses: string[] = [];
  const members: string[] = [];
  const memberValues: Record<string, string[]> = {};
  const answerMembers: Record<string, string[]> = {};
  layout.names.forEach((named, bit) => {
    if (!isSet(row.bits, bit)) return;
    if (named.kind === "parameter") parameters.push(named.name);
    else if (named.kind === "status") statuses.push(named.name);
    else if (named.kind === "member") members.push(named.name);
    else if (named.kind === "answerMember") {
      const status = named.status as string;
      answerMembers[status] ??= [];
      answerMembers[status]?.push(named.name);
    } else {
      const into = named.kind === "value" ? values : memberValues;
      into[named.name] ??= [];
      into[named.name]?.push(named.value as string);
    }
  });
  return {
    consumer,
    operation: layout.id,
    calls,
    firstSeen: new Date(row.first).toISOString(),
    lastSeen: new Date(row.last).toISOString(),
    parameters,
    values,
    statuses,
    members,
    memberValues,
    sampled: row.sampled,
    answerMembers,
  };
}

/** Rows of several processes (or log lines) into one per consumer and operation. */
export function mergeRows(rows: Iterable<UsageRow>): UsageRow[] {
  const merged = new Map<string, UsageRow>();
  for (const row of rows) {
    const key = rowKey(row);
    merged.set(key, mergeRow(merged.get(key), row));
  }
  return [...merged.values()];
}

/** The key rows of one consumer and operation share. */
export function rowKey(row: Pick<UsageRow, "consumer" | "operation">): string {
  return `${row.operation}\u0000${row.consumer}`;
}

/** Two rows of one consumer and operation as one: calls summed, names united, the widest span. */
export function mergeRow(held: UsageRow | undefined, row: UsageRow): UsageRow {
  if (held === undefined) return row;
  const union = (a: readonly string[], b: readonly string[]) => [...new Set([...a, ...b])];
  const unite = (
    a: Readonly<Record<string, readonly string[]>>,
    b: Readonly<Record<string, readonly string[]>>,
  ) => {
    const all: Record<string, string[]> = { ...a } as Record<string, string[]>;
    for (const [name, list] of Object.entries(b)) all[name] = union(all[name] ?? [], list);
    return all;
  };
  return {
    consumer: row.consumer,
    operation: row.operation,
    calls: held.calls + row.calls,
    firstSeen: row.firstSeen < held.firstSeen ? row.firstSeen : held.firstSeen,
    lastSeen: row.lastSeen > held.lastSeen ? row.lastSeen : held.lastSeen,
    parameters: union(held.parameters, row.parameters),
    values: unite(held.values, row.values),
    statuses: union(held.statuses, row.statuses),
    members: union(held.members, row.members),
    memberValues: unite(held.memberValues, row.memberValues),
    sampled: held.sampled + row.sampled,
    answerMembers: unite(held.answerMembers, row.answerMembers),
  };
}

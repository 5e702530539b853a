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
  readonly parameters: ReadonlyMap<string, number>;
  readonly values: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** Exact statuses ("404") to their bit; ranges ("4XX") by first digit; default last. */
  readonly exact: ReadonlyMap<number, number>;
  readonly ranges: ReadonlyMap<number, number>;
  readonly fallback: number | undefined;
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
  first: number;
  last: number;
  /** Calls since the row was last written to the logs. */
  unlogged: number;
  /** Answers whose members were read. */
  sampled: number;
  readonly bits: Uint32Array;
}

type ConsumerRows = (Row | undefined)[];

export class UsageMemory {
  readonly #layouts: Map<Operation, Layout>;
  readonly #operations: number;
  readonly #consumers: LRUCache<string, ConsumerRows>;
  #evicted = 0;
  readonly #since: number;

  constructor(api: ApiDescription, maxConsumers: number, now: number) {
    this.#layouts = new Map(
      api.operations.map((operation, index) => [operation, layoutOf(operation, index, api.schemas)]),
    );
    this.#operations = api.operations.length;
    this.#consumers = new LRUCache({
      max: maxConsumers,
      dispose: (_rows, _consumer, reason) => {
        if (reason === "evict") this.#evicted++;
      },
    });
    this.#since = now;
  }

  /** The query a consumer sent to an operation, before any policy changed it. */
  sent(operation: Operation, consumer: string, query: ReadonlyMap<string, string>, at: number): void {
    if (query.size === 0) return;
    const layout = this.#layouts.get(operation);
    if (layout === undefined) return;
    const row = this.#row(layout, consumer, at);
    for (const [name, value] of query) {
      const bit = layout.parameters.get(name);
      if (bit === undefined) continue;
      set(row.bits, bit);
      const valueBit = layout.values.get(name)?.get(value);
      if (valueBit !== undefined) set(row.bits, valueBit);
    }
  }

  /** The JSON body a consumer sent to an operation (parsed here: not JSON, nothing is recorded). */
  sentBody(operation: Operation, consumer: string, body: Buffer, at: number): void {
    const layout = this.#layouts.get(operation);
    if (layout?.body === undefined || layout.body.members.size === 0) return;
    let value: unknown;
    try {
      value = JSON.parse(body.toString("utf8"));
    } catch {
      return;
    }
    const { bits } = this.#row(layout, consumer, at);
    setSentMembers(layout.body, value, (bit) => set(bits, bit));
  }

  /** A JSON answer a consumer received, read on a sample: the members present on it. */
  receivedBody(operation: Operation, consumer: string, status: number, text: string, at: number): void {
    const layout = this.#layouts.get(operation);
    const written = layout?.writtenOf(status);
    const members = written === undefined ? undefined : layout?.answers.get(written);
    if (layout === undefined || members === undefined) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return;
    }
    const row = this.#row(layout, consumer, at);
    row.sampled++;
    setSentMembers(members, value, (bit) => set(row.bits, bit));
  }

  /** One answer a consumer received from an operation: a call. */
  answered(operation: Operation, consumer: string, status: number, at: number): void {
    const layout = this.#layouts.get(operation);
    if (layout === undefined) return;
    const row = this.#row(layout, consumer, at);
    row.calls++;
    row.unlogged++;
    if (at > row.last) row.last = at;
    const bit = layout.exact.get(status) ?? layout.ranges.get(Math.floor(status / 100)) ?? layout.fallback;
    if (bit !== undefined) set(row.bits, bit);
  }

  /** Consumers dropped past the bound since the start. */
  get evicted(): number {
    return this.#evicted;
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
    const layouts = [...this.#layouts.values()];
    // The consumers as they are now: a caller may pause between rows (slices) while calls go on.
    const consumers = [...this.#consumers.entries()];
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

  #row(layout: Layout, consumer: string, at: number): Row {
    let rows = this.#consumers.get(consumer);
    if (rows === undefined) {
      rows = new Array<Row | undefined>(this.#operations);
      this.#consumers.set(consumer, rows);
    }
    let row = rows[layout.index];
    if (row === undefined) {
      row = { calls: 0, first: at, last: at, unlogged: 0, sampled: 0, bits: new Uint32Array(layout.words) };
      rows[layout.index] = row;
    }
    return row;
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
  const parameters = new Map<string, number>();
  const values = new Map<string, Map<string, number>>();
  for (const parameter of operation.queryParameters.values()) {
    parameters.set(parameter.name, names.length);
    names.push({ kind: "parameter", name: parameter.name });
    const listed = parameter.schema.enum;
    if (!Array.isArray(listed)) continue;
    // A value arrives as text: the enum's members as the query writes them.
    const bits = new Map<string, number>();
    for (const member of listed) {
      const text = typeof member === "string" ? member : JSON.stringify(member);
      if (bits.has(text)) continue;
      bits.set(text, names.length);
      names.push({ kind: "value", name: parameter.name, value: text });
    }
    values.set(parameter.name, bits);
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
  const exact = new Map<number, number>();
  const ranges = new Map<number, number>();
  let fallback: number | undefined;
  const statusKeys = new Map<number, string>();
  for (const written of operation.responses.keys()) {
    const bit = names.length;
    names.push({ kind: "status", name: written });
    statusKeys.set(bit, written);
    const upper = written.toUpperCase();
    if (/^[1-5]XX$/.test(upper)) ranges.set(Number(upper[0]), bit);
    else if (upper === "DEFAULT") fallback = bit;
    else exact.set(Number(written), bit);
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
  const writtenOf = (status: number) => {
    const bit = exact.get(status) ?? ranges.get(Math.floor(status / 100)) ?? fallback;
    return bit === undefined ? undefined : statusKeys.get(bit);
  };
  return {
    index,
    id: operation.id,
    parameters,
    values,
    exact,
    ranges,
    fallback,
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

// What changes between the document the gateway serves and a candidate, and whom each change
// breaks: a client written against the running document. Pure: two compiled descriptions in, a
// list of differences out, breaking ones first. A reload refuses a candidate with a breaking one
// (unless the config allows it) or one that weakens security; the change review reads the same
// list against recorded traffic.
//
// The rule is the direction of the value. What a client sends (a parameter, a request body) breaks
// when the candidate accepts less: a value, an enum member or a property it no longer takes, a
// bound tightened, a member made required. What a client receives (an answer) breaks when the
// candidate may give more or other than it promised: a member or a status removed, a member made
// optional, an enum value or a status added, a bound widened (a client that switches over the
// values it was told of meets one it does not know).
import { escapePointerToken } from "./json/pointer.ts";
import type { ApiDescription, Operation, ParameterSpec } from "./openapi.ts";
import type { SecurityScheme } from "./openapi-security.ts";
import type { AnyPolicyDefinition } from "./policy-registry.ts";
import { describeSchema } from "./schema-brief.ts";

export type Direction = "request" | "response";

export type DifferenceKind =
  | "operation-removed"
  | "operation-added"
  | "operation-renamed"
  | "base-path-changed"
  | "parameter-removed"
  | "parameter-added"
  | "parameter-made-required"
  | "parameter-made-optional"
  | "request-body-added"
  | "request-body-removed"
  | "request-body-made-required"
  | "request-body-made-optional"
  | "media-type-removed"
  | "media-type-added"
  | "status-removed"
  | "status-added"
  | "type-changed"
  | "enum-value-removed"
  | "enum-value-added"
  | "bound-tightened"
  | "bound-widened"
  | "pattern-changed"
  | "member-removed"
  | "member-added"
  | "member-made-required"
  | "member-made-optional"
  | "members-closed"
  | "members-opened"
  | "alternative-removed"
  | "alternative-added"
  | "security-weakened"
  | "security-strengthened"
  | "deprecated"
  | "undeprecated"
  | "sunset-earlier"
  | "sunset-later";

export interface DocumentDifference {
  readonly kind: DifferenceKind;
  /** A client written against the running document may fail against the candidate. */
  readonly breaking: boolean;
  /** Lets in callers the running document keeps out: refused at reload whatever the config allows. */
  readonly weakensSecurity: boolean;
  /** Whose values change: what clients send, or what they receive. */
  readonly direction: Direction;
  /** The operation's id in the running document (the candidate's for one added). */
  readonly operation: string | undefined;
  readonly method: string | undefined;
  /** The path template, as the document writes it. */
  readonly path: string | undefined;
  /** Where in the operation: "query parameter limit", "request body application/json", "response 200". */
  readonly location: string | undefined;
  /**
   * Where in the value, as a JSON pointer into it ("" for the value itself): array items are `-`,
   * additionalProperties `*`. Recorded usage names members the same way.
   */
  readonly pointer: string | undefined;
  /** One line for a person: what changed, old and new. */
  readonly message: string;
  /** The enum value removed or added (enum-value-*): recorded usage names the values sent. */
  readonly value?: unknown;
  /**
   * An alternative of a oneOf or anyOf removed or added (alternative-*): what tells a value of
   * that shape from the other alternatives' values, as recorded usage names members (pointers into
   * the value, like `pointer`) and their values (as text). Empty when nothing does.
   */
  readonly alternative?: AlternativeMarks;
}

/** The members only one alternative has, and the values only it takes at a member the others share. */
export interface AlternativeMarks {
  readonly members: readonly string[];
  readonly values: Readonly<Record<string, readonly string[]>>;
}

/** How far into nested schemas the comparison goes: deeper than any real document, and a bound on the work. */
const MAX_DEPTH = 32;

type Schema = Readonly<Record<string, unknown>>;
type Schemas = Readonly<Record<string, unknown>>;

interface Where {
  readonly operation: Operation;
  readonly location: string;
  readonly direction: Direction;
}

/**
 * Every difference a reload and the change review judge: the documents' own (diffDocuments) and
 * what each policy's options show (PolicyDefinition.compareDocuments: a sunset the config gives),
 * breaking ones first.
 */
export function compareDocuments(
  running: ApiDescription,
  candidate: ApiDescription,
  setting: {
    readonly policies: readonly AnyPolicyDefinition[];
    readonly options: Readonly<Record<string, unknown>>;
  },
): DocumentDifference[] {
  const found = [
    ...diffDocuments(running, candidate),
    ...setting.policies.flatMap(
      (definition) =>
        definition.compareDocuments?.(setting.options[definition.name], running, candidate) ?? [],
    ),
  ];
  return breakingFirst(found);
}

/** Stable: within each group, the order found. */
function breakingFirst(found: readonly DocumentDifference[]): DocumentDifference[] {
  return [
    ...found.filter((d) => d.weakensSecurity || d.breaking),
    ...found.filter((d) => !(d.weakensSecurity || d.breaking)),
  ];
}

/**
 * Every difference the two documents' text shows from `running` to `candidate`: breaking ones
 * first, then in the documents' order. What a policy's options add is compareDocuments'.
 */
export function diffDocuments(running: ApiDescription, candidate: ApiDescription): DocumentDifference[] {
  const found: DocumentDifference[] = [];
  const add = (
    kind: DifferenceKind,
    breaking: boolean,
    direction: Direction,
    operation: Operation | undefined,
    location: string | undefined,
    pointer: string | undefined,
    message: string,
    weakensSecurity = false,
    value?: unknown,
    alternative?: AlternativeMarks,
  ) =>
    found.push({
      kind,
      breaking,
      weakensSecurity,
      direction,
      operation: operation?.id,
      method: operation?.method,
      path: operation?.path,
      location,
      pointer,
      message,
      ...(value === undefined ? {} : { value }),
      ...(alternative === undefined ? {} : { alternative }),
    });

  if (running.basePath !== candidate.basePath) {
    add(
      "base-path-changed",
      true,
      "request",
      undefined,
      undefined,
      undefined,
      `the base path changes from "${running.basePath}" to "${candidate.basePath}": every URL moves`,
    );
  }
  const keyOf = (operation: Operation) => `${operation.method} ${operation.path}`;
  const next = new Map(candidate.operations.map((operation) => [keyOf(operation), operation] as const));
  const before = new Set(running.operations.map(keyOf));
  for (const old of running.operations) {
    const now = next.get(keyOf(old));
    if (now === undefined) {
      add(
        "operation-removed",
        true,
        "request",
        old,
        undefined,
        undefined,
        `removes ${keyOf(old)} (${old.id})`,
      );
      continue;
    }
    if (now.id !== old.id) {
      add(
        "operation-renamed",
        false,
        "request",
        old,
        undefined,
        undefined,
        `${keyOf(old)} is now named ${now.id} (was ${old.id}): its metric series and reports start anew`,
      );
    }
    diffOperation(old, now, running.schemas, candidate.schemas, add);
  }
  for (const added of candidate.operations) {
    if (before.has(keyOf(added))) continue;
    add(
      "operation-added",
      false,
      "request",
      added,
      undefined,
      undefined,
      `adds ${keyOf(added)} (${added.id})`,
    );
  }
  return breakingFirst(found);
}

type Add = (
  kind: DifferenceKind,
  breaking: boolean,
  direction: Direction,
  operation: Operation | undefined,
  location: string | undefined,
  pointer: string | undefined,
  message: string,
  weakensSecurity?: boolean,
  value?: unknown,
  alternative?: AlternativeMarks,
) => void;

function diffOperation(
  old: Operation,
  now: Operation,
  oldSchemas: Schemas,
  newSchemas: Schemas,
  add: Add,
): void {
  diffSecurity(old, now, add);
  diffLifecycle(old, now, add);

  // Parameters: by place and name. Path parameters may be renamed with the template's text.
  const parametersOf = (operation: Operation) =>
    new Map<string, ParameterSpec>([
      ...[...operation.queryParameters.values()].map((p) => [`query:${p.name}`, p] as const),
      ...operation.pathParameters.map((p) => [`path:${p.name}`, p] as const),
    ]);
  const oldParameters = parametersOf(old);
  const newParameters = parametersOf(now);
  for (const [key, parameter] of oldParameters) {
    const location = `${parameter.in} parameter ${parameter.name}`;
    const next = newParameters.get(key);
    if (next === undefined) {
      add("parameter-removed", true, "request", old, location, undefined, `removes the ${location}`);
      continue;
    }
    if (!parameter.required && next.required) {
      add(
        "parameter-made-required",
        true,
        "request",
        old,
        location,
        undefined,
        `the ${location} becomes required`,
      );
    } else if (parameter.required && !next.required) {
      add(
        "parameter-made-optional",
        false,
        "request",
        old,
        location,
        undefined,
        `the ${location} becomes optional`,
      );
    }
    compareSchemas(
      parameter.schema,
      next.schema,
      oldSchemas,
      newSchemas,
      { operation: old, location, direction: "request" },
      add,
    );
  }
  for (const [key, parameter] of newParameters) {
    if (oldParameters.has(key)) continue;
    const location = `${parameter.in} parameter ${parameter.name}`;
    add(
      parameter.required ? "parameter-made-required" : "parameter-added",
      parameter.required,
      "request",
      old,
      location,
      undefined,
      parameter.required ? `adds the ${location}, required` : `adds the optional ${location}`,
    );
  }

  // The request body.
  const oldBody = old.requestBody;
  const newBody = now.requestBody;
  if (oldBody === undefined && newBody !== undefined) {
    add(
      "request-body-added",
      newBody.required,
      "request",
      old,
      "request body",
      undefined,
      newBody.required ? "adds a required request body" : "adds an optional request body",
    );
  } else if (oldBody !== undefined && newBody === undefined) {
    // A body the candidate does not declare is passed on unread; a client sending it is not refused.
    add(
      "request-body-removed",
      false,
      "request",
      old,
      "request body",
      undefined,
      "no longer declares a request body",
    );
  } else if (oldBody !== undefined && newBody !== undefined) {
    if (!oldBody.required && newBody.required) {
      add(
        "request-body-made-required",
        true,
        "request",
        old,
        "request body",
        undefined,
        "the request body becomes required",
      );
    } else if (oldBody.required && !newBody.required) {
      add(
        "request-body-made-optional",
        false,
        "request",
        old,
        "request body",
        undefined,
        "the request body becomes optional",
      );
    }
    const newMedia = new Map(newBody.content.map((entry) => [entry.mediaType, entry] as const));
    for (const entry of oldBody.content) {
      const location = `request body ${entry.mediaType}`;
      const next = newMedia.get(entry.mediaType);
      if (next === undefined) {
        add(
          "media-type-removed",
          true,
          "request",
          old,
          location,
          undefined,
          `no longer accepts a ${entry.mediaType} body`,
        );
        continue;
      }
      compareSchemas(
        entry.schema,
        next.schema,
        oldSchemas,
        newSchemas,
        { operation: old, location, direction: "request" },
        add,
      );
    }
    for (const entry of newBody.content) {
      if (oldBody.content.some((o) => o.mediaType === entry.mediaType)) continue;
      add(
        "media-type-added",
        false,
        "request",
        old,
        `request body ${entry.mediaType}`,
        undefined,
        `also accepts a ${entry.mediaType} body`,
      );
    }
  }

  // The answers: by status as written ("200", "4XX", "default").
  for (const [status, response] of old.responses) {
    const location = `response ${status}`;
    const next = now.responses.get(status);
    if (next === undefined) {
      add("status-removed", true, "response", old, location, undefined, `no longer answers ${status}`);
      continue;
    }
    compareSchemas(
      response.schema,
      next.schema,
      oldSchemas,
      newSchemas,
      { operation: old, location, direction: "response" },
      add,
    );
  }
  for (const status of now.responses.keys()) {
    if (old.responses.has(status)) continue;
    add(
      "status-added",
      true,
      "response",
      old,
      `response ${status}`,
      undefined,
      `may answer ${status}, which a client switching over the statuses it was told of does not know`,
    );
  }
}

// Only the mark: the dates (x-gateway-deprecation, or the config's) are the lifecycle policy's to
// compare (policies/lifecycle/changes.ts), since the config may give them.
function diffLifecycle(old: Operation, now: Operation, add: Add): void {
  if (!old.deprecated && now.deprecated)
    add("deprecated", false, "request", old, undefined, undefined, "becomes deprecated");
  if (old.deprecated && !now.deprecated)
    add("undeprecated", false, "request", old, undefined, undefined, "is no longer deprecated");
}

/**
 * The alternatives as sets of scheme names, any one of which lets a caller in. No requirement at
 * all (`security: []`, or none declared) is one empty alternative: anybody.
 */
function alternativesOf(operation: Operation): readonly ReadonlySet<string>[] {
  const { alternatives } = operation.security;
  if (alternatives.length === 0) return [new Set()];
  return alternatives.map((alternative) => new Set(alternative.map(schemeKey)));
}

function schemeKey(scheme: SecurityScheme): string {
  return `${scheme.name}:${scheme.type ?? "?"}:${scheme.scheme ?? ""}`;
}

function subset(small: ReadonlySet<string>, large: ReadonlySet<string>): boolean {
  for (const item of small) if (!large.has(item)) return false;
  return true;
}

function diffSecurity(old: Operation, now: Operation, add: Add): void {
  const before = alternativesOf(old);
  const after = alternativesOf(now);
  // Weaker: some way in that asks less than every way in the running document did.
  const weaker = after.some((alternative) => !before.some((was) => subset(was, alternative)));
  // Stronger: some caller the running document let in no longer gets in.
  const stronger = before.some((was) => !after.some((alternative) => subset(alternative, was)));
  const describe = (alternatives: readonly ReadonlySet<string>[]) =>
    alternatives
      .map((alternative) =>
        alternative.size === 0 ? "anyone" : [...alternative].map((key) => key.split(":")[0]).join(" and "),
      )
      .join(" or ");
  if (weaker) {
    add(
      "security-weakened",
      false,
      "request",
      old,
      "security",
      undefined,
      `security weakens: ${describe(after)} (was ${describe(before)})`,
      true,
    );
  }
  if (stronger) {
    add(
      "security-strengthened",
      true,
      "request",
      old,
      "security",
      undefined,
      `security changes: ${describe(after)} (was ${describe(before)})`,
    );
  }
}

/**
 * Compares two schemas of one value in one direction, following each document's $refs; a pair of
 * $refs is compared once (recursive schemas end there, and the work stays linear in the pairs).
 */
function compareSchemas(
  oldValue: unknown,
  newValue: unknown,
  oldSchemas: Schemas,
  newSchemas: Schemas,
  where: Where,
  add: Add,
): void {
  const seen = new Set<string>();
  const visit = (oldRaw: unknown, newRaw: unknown, pointer: string, depth: number): void => {
    if (depth > MAX_DEPTH) return;
    // A pair of named schemas met again (a recursive one, or one used twice) was said the first time.
    const pair = `${refOf(oldRaw) ?? ""}|${refOf(newRaw) ?? ""}`;
    if (pair !== "|") {
      if (seen.has(pair)) return;
      seen.add(pair);
    }
    const o = flatten(oldRaw, oldSchemas);
    const n = flatten(newRaw, newSchemas);
    if (o === undefined || n === undefined) return;
    if (o.choice !== undefined || n.choice !== undefined) {
      const compared = compareChoices(oldRaw, newRaw, o, n, pointer, depth);
      // A choice that only wraps (3.0's nullable around a $ref) against one shape: that shape was
      // compared with its alternatives, and the wrapper says nothing of its own.
      if (compared === "instead") return;
    }
    compareNode(o, n, pointer, where, add);
    // Members: by name.
    const oldProps = o.properties;
    const newProps = n.properties;
    const oldRequired = o.required;
    const newRequired = n.required;
    const request = where.direction === "request";
    for (const [name, schema] of oldProps) {
      const at = `${pointer}/${escapePointerToken(name)}`;
      const next = newProps.get(name);
      if (next === undefined) {
        // A client that sends a member the candidate closes out is refused; an answer without a
        // member a client reads breaks the client.
        const breaking = request ? n.closed : true;
        add(
          "member-removed",
          breaking,
          where.direction,
          where.operation,
          where.location,
          at,
          `${where.location}: removes the member ${at}`,
        );
        continue;
      }
      visit(schema, next, at, depth + 1);
    }
    for (const name of newProps.keys()) {
      if (oldProps.has(name)) continue;
      const at = `${pointer}/${escapePointerToken(name)}`;
      // A new member the client must send is "made required", below.
      if (!(request && newRequired.has(name))) {
        add(
          "member-added",
          false,
          where.direction,
          where.operation,
          where.location,
          at,
          `${where.location}: adds the member ${at}`,
        );
      }
    }
    for (const name of newRequired) {
      if (oldRequired.has(name)) continue;
      const at = `${pointer}/${escapePointerToken(name)}`;
      add(
        request ? "member-made-required" : "member-made-optional",
        request,
        where.direction,
        where.operation,
        where.location,
        at,
        request
          ? `${where.location}: the member ${at} becomes required`
          : `${where.location}: the member ${at} is now always there`,
      );
    }
    for (const name of oldRequired) {
      if (newRequired.has(name)) continue;
      const at = `${pointer}/${escapePointerToken(name)}`;
      // Gone altogether was said above.
      if (!newProps.has(name) && oldProps.has(name)) continue;
      add(
        "member-made-optional",
        !request,
        where.direction,
        where.operation,
        where.location,
        at,
        request
          ? `${where.location}: the member ${at} becomes optional`
          : `${where.location}: the member ${at} may be missing`,
      );
    }
    if (o.closed !== n.closed) {
      // Closing what a client sends refuses the members it no longer may send; opening an answer
      // lets members in that a strict client does not expect.
      const closing = n.closed;
      add(
        closing ? "members-closed" : "members-opened",
        request ? closing : !closing,
        where.direction,
        where.operation,
        where.location,
        pointer,
        `${where.location}: ${pointer || "the value"} ${closing ? "no longer takes" : "now takes"} members it does not name`,
      );
    }
    if (o.items !== undefined && n.items !== undefined) visit(o.items, n.items, `${pointer}/-`, depth + 1);
    if (o.additional !== undefined && n.additional !== undefined)
      visit(o.additional, n.additional, `${pointer}/*`, depth + 1);
  };
  /**
   * The oneOf or anyOf of either side, alternative by alternative: each of the running document's
   * paired with the candidate's it most resembles and compared member by member (their members'
   * pointers are the value's own, as recorded usage names them); one without a pair is removed
   * (a client sending that shape is refused; an answer of that shape no longer comes) or added (a
   * client that switches over the shapes it was told of meets one it does not know). One side's
   * single shape is a choice of one against the other's, when the other only wraps its choice.
   */
  const compareChoices = (
    oldRaw: unknown,
    newRaw: unknown,
    o: Flat,
    n: Flat,
    pointer: string,
    depth: number,
  ): "instead" | "beside" => {
    const request = where.direction === "request";
    const reportAt = reporterAt(where, pointer, add);
    const report = (kind: DifferenceKind, breaking: boolean, message: string, marks?: AlternativeMarks) =>
      reportAt(kind, breaking, message, undefined, marks);
    let instead = false;
    let before = o.choice;
    let after = n.choice;
    if (before === undefined && after !== undefined) {
      if (!onlyWraps(n)) {
        report(
          "bound-tightened",
          request,
          `must now be one of its ${after.keyword}'s ${after.branches.length}`,
        );
        return "beside";
      }
      before = { keyword: after.keyword, branches: [oldRaw] };
      instead = true;
    } else if (before !== undefined && after === undefined) {
      if (!onlyWraps(o)) {
        report(
          "bound-widened",
          !request,
          `is no longer one of its ${before.keyword}'s ${before.branches.length}`,
        );
        return "beside";
      }
      after = { keyword: before.keyword, branches: [newRaw] };
      instead = true;
    }
    if (before === undefined || after === undefined) return "beside";
    if (before.keyword !== after.keyword) {
      // oneOf refuses a value that matches two alternatives, which anyOf takes.
      const tighter = after.keyword === "oneOf";
      report(
        tighter ? "bound-tightened" : "bound-widened",
        request ? tighter : !tighter,
        `its alternatives become ${after.keyword} (were ${before.keyword})`,
      );
    }
    const pairs = pairAlternatives(before.branches, after.branches, oldSchemas, newSchemas);
    for (const [oldIndex, newIndex] of pairs) {
      visit(before.branches[oldIndex], after.branches[newIndex], pointer, depth + 1);
    }
    const paired = (index: number, side: 0 | 1) => pairs.some((pair) => pair[side] === index);
    before.branches.forEach((branch, index) => {
      if (paired(index, 0)) return;
      const name = alternativeName(branch, oldSchemas);
      const marks = marksOf(index, before.branches, oldSchemas, pointer);
      report(
        "alternative-removed",
        request,
        request
          ? `removes the alternative ${name} of its ${before.keyword}: a value of that shape is refused`
          : `no longer answers with the alternative ${name} of its ${before.keyword}`,
        marks,
      );
    });
    after.branches.forEach((branch, index) => {
      if (paired(index, 1)) return;
      const name = alternativeName(branch, newSchemas);
      const marks = marksOf(index, after.branches, newSchemas, pointer);
      report(
        "alternative-added",
        !request,
        request
          ? `adds the alternative ${name} to its ${after.keyword}`
          : `may now be the alternative ${name}, which a client switching over the alternatives it was told of does not know`,
        marks,
      );
    });
    return instead ? "instead" : "beside";
  };
  visit(oldValue, newValue, "", 0);
}

function refOf(value: unknown): string | undefined {
  const ref = (value as { $ref?: unknown } | null | undefined)?.$ref;
  return typeof ref === "string" ? ref : undefined;
}

/** A schema with its $refs followed and its allOf folded into one view of what it asks. */
interface Flat {
  readonly types: ReadonlySet<string> | undefined;
  readonly enum: readonly unknown[] | undefined;
  readonly bounds: ReadonlyMap<string, number>;
  readonly pattern: string | undefined;
  readonly properties: Map<string, unknown>;
  readonly required: Set<string>;
  /** additionalProperties: false (or unevaluatedProperties: false). */
  readonly closed: boolean;
  readonly items: unknown;
  readonly additional: unknown;
  /** The first oneOf or anyOf met (its own or an allOf branch's): the alternatives a value is one of. */
  readonly choice: Choice | undefined;
}

interface Choice {
  readonly keyword: "oneOf" | "anyOf";
  readonly branches: readonly unknown[];
}

/** Lower bounds: raising one tightens. Upper bounds: lowering one tightens. */
const LOWER_BOUNDS = ["minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"];
const UPPER_BOUNDS = ["maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"];

function flatten(value: unknown, schemas: Schemas): Flat | undefined {
  const flat: {
    types: Set<string> | undefined;
    enum: unknown[] | undefined;
    bounds: Map<string, number>;
    pattern: string | undefined;
    properties: Map<string, unknown>;
    required: Set<string>;
    closed: boolean;
    items: unknown;
    additional: unknown;
    choice: Choice | undefined;
  } = {
    types: undefined,
    enum: undefined,
    bounds: new Map(),
    pattern: undefined,
    properties: new Map(),
    required: new Set(),
    closed: false,
    items: undefined,
    additional: undefined,
    choice: undefined,
  };
  let any = false;
  // allOf branches and $ref targets, each schema once.
  const queue: unknown[] = [value];
  const visited = new Set<unknown>();
  while (queue.length > 0 && visited.size <= MAX_DEPTH * 4) {
    const raw = queue.shift();
    const schema = resolveRef(raw, schemas);
    if (schema === undefined || visited.has(schema)) continue;
    visited.add(schema);
    any = true;
    if (Array.isArray(schema.allOf)) queue.push(...schema.allOf);
    const type = schema.type;
    if (typeof type === "string" || Array.isArray(type)) {
      const types = new Set(
        (Array.isArray(type) ? type : [type]).filter((t): t is string => typeof t === "string"),
      );
      // allOf narrows: what every branch allows.
      flat.types = flat.types === undefined ? types : new Set([...flat.types].filter((t) => types.has(t)));
    }
    if (Array.isArray(schema.enum)) flat.enum = flat.enum ?? [...schema.enum];
    if ("const" in schema) flat.enum = flat.enum ?? [schema.const];
    for (const bound of [...LOWER_BOUNDS, ...UPPER_BOUNDS]) {
      const number = schema[bound];
      if (typeof number !== "number") continue;
      const held = flat.bounds.get(bound);
      const lower = LOWER_BOUNDS.includes(bound);
      flat.bounds.set(
        bound,
        held === undefined ? number : lower ? Math.max(held, number) : Math.min(held, number),
      );
    }
    if (typeof schema.pattern === "string") flat.pattern = flat.pattern ?? schema.pattern;
    if (isObject(schema.properties)) {
      for (const [name, member] of Object.entries(schema.properties)) {
        if (!flat.properties.has(name)) flat.properties.set(name, member);
      }
    }
    if (Array.isArray(schema.required))
      for (const name of schema.required) if (typeof name === "string") flat.required.add(name);
    if (schema.additionalProperties === false || schema.unevaluatedProperties === false) flat.closed = true;
    if (isObject(schema.additionalProperties))
      flat.additional = flat.additional ?? schema.additionalProperties;
    if (schema.items !== undefined && typeof schema.items === "object")
      flat.items = flat.items ?? schema.items;
    for (const keyword of ["oneOf", "anyOf"] as const) {
      const branches = schema[keyword];
      if (Array.isArray(branches) && branches.length > 0) flat.choice ??= { keyword, branches };
    }
  }
  return any ? flat : undefined;
}

function resolveRef(value: unknown, schemas: Schemas): Schema | undefined {
  let node = value;
  // A chain of $refs ends, or is cut at the depth bound.
  for (let hops = 0; hops <= MAX_DEPTH; hops++) {
    if (!isObject(node)) return undefined;
    const ref = refOf(node);
    if (ref === undefined) return node;
    const name = /^#\/components\/schemas\/([^/]+)$/.exec(ref)?.[1];
    if (name === undefined) return node;
    node = schemas[name.replaceAll("~1", "/").replaceAll("~0", "~")];
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Reports a difference at one place of a schema ("request body at /name: …"): how both the member
 * comparison and the alternatives' word their findings.
 */
function reporterAt(where: Where, pointer: string, add: Add) {
  const place = `${where.location}${pointer === "" ? "" : ` at ${pointer}`}`;
  return (
    kind: DifferenceKind,
    breaking: boolean,
    message: string,
    value?: unknown,
    marks?: AlternativeMarks,
  ) =>
    add(
      kind,
      breaking,
      where.direction,
      where.operation,
      where.location,
      pointer,
      `${place}: ${message}`,
      false,
      value,
      marks,
    );
}

function compareNode(o: Flat, n: Flat, pointer: string, where: Where, add: Add): void {
  const request = where.direction === "request";
  const report = reporterAt(where, pointer, add);

  if (o.types !== undefined || n.types !== undefined) {
    const before = o.types;
    const after = n.types;
    // "integer" is within "number": a request side going integer -> number accepts more.
    const covers = (wide: ReadonlySet<string> | undefined, narrow: ReadonlySet<string> | undefined) =>
      wide === undefined ||
      (narrow !== undefined &&
        [...narrow].every((t) => wide.has(t) || (t === "integer" && wide.has("number"))));
    const accepted = request ? covers(after, before) : covers(before, after);
    if (!accepted) {
      const show = (types: ReadonlySet<string> | undefined) =>
        types === undefined ? "any" : [...types].join(" or ");
      report("type-changed", true, `the type changes from ${show(before)} to ${show(after)}`);
    }
  }

  if (o.enum !== undefined || n.enum !== undefined) {
    const before = o.enum;
    const after = n.enum;
    const has = (values: readonly unknown[], value: unknown) =>
      values.some((v) => JSON.stringify(v) === JSON.stringify(value));
    const removed =
      before === undefined ? [] : after === undefined ? [] : before.filter((value) => !has(after, value));
    const added =
      after === undefined ? [] : before === undefined ? [] : after.filter((value) => !has(before, value));
    for (const value of removed) {
      report("enum-value-removed", request, `the value ${JSON.stringify(value)} is removed`, value);
    }
    for (const value of added) {
      report(
        "enum-value-added",
        !request,
        request
          ? `the value ${JSON.stringify(value)} is added`
          : `may now be ${JSON.stringify(value)}, a value a client switching over them does not know`,
        value,
      );
    }
    if (before === undefined && after !== undefined)
      report("bound-tightened", request, `now only ${JSON.stringify(after)}`);
    if (before !== undefined && after === undefined)
      report("bound-widened", !request, "is no longer limited to a list of values");
  }

  for (const bound of [...LOWER_BOUNDS, ...UPPER_BOUNDS]) {
    const before = o.bounds.get(bound);
    const after = n.bounds.get(bound);
    if (before === after) continue;
    const lower = LOWER_BOUNDS.includes(bound);
    // Tighter: a bound appears, or moves inward.
    const tighter =
      before === undefined ? true : after === undefined ? false : lower ? after > before : after < before;
    const text =
      before === undefined
        ? `${bound} ${after} is added`
        : after === undefined
          ? `${bound} ${before} is removed`
          : `${bound} goes from ${before} to ${after}`;
    report(tighter ? "bound-tightened" : "bound-widened", request ? tighter : !tighter, text);
  }

  if (o.pattern !== n.pattern) {
    // Two patterns cannot be compared for what they accept: any change may refuse a value.
    const text =
      o.pattern === undefined
        ? `the pattern ${JSON.stringify(n.pattern)} is added`
        : n.pattern === undefined
          ? `the pattern ${JSON.stringify(o.pattern)} is removed`
          : `the pattern changes from ${JSON.stringify(o.pattern)} to ${JSON.stringify(n.pattern)}`;
    const breaking = request ? n.pattern !== undefined : o.pattern !== undefined;
    report("pattern-changed", breaking, text);
  }
}

/** A flattened schema that holds nothing of its own beside its oneOf or anyOf (3.0's nullable around a $ref). */
function onlyWraps(flat: Flat): boolean {
  return (
    flat.properties.size === 0 &&
    flat.required.size === 0 &&
    flat.types === undefined &&
    flat.enum === undefined &&
    flat.bounds.size === 0 &&
    flat.pattern === undefined &&
    flat.items === undefined &&
    flat.additional === undefined &&
    !flat.closed
  );
}

/** Past this many (old, new) pairs of alternatives, only the same $ref or the same text pairs. */
const MAX_SCORED_PAIRS = 10_000;
/** How alike two alternatives must be to be one alternative changed: more than half their marks shared. */
const ALIKE = 0.5;

/**
 * Which alternative of the candidate each of the running document's is, as [old, new] indexes:
 * the same $ref, then the same text, then the most alike (their member names, types and
 * single-valued members, a discriminator's value, shared by more than half).
 */
function pairAlternatives(
  before: readonly unknown[],
  after: readonly unknown[],
  oldSchemas: Schemas,
  newSchemas: Schemas,
): [number, number][] {
  const pairs: [number, number][] = [];
  const oldFree = new Set(before.keys());
  const newFree = new Set(after.keys());
  const pairWhere = (same: (o: unknown, n: unknown) => boolean) => {
    for (const i of oldFree) {
      for (const j of newFree) {
        if (!same(before[i], after[j])) continue;
        pairs.push([i, j]);
        oldFree.delete(i);
        newFree.delete(j);
        break;
      }
    }
  };
  pairWhere((o, n) => refOf(o) !== undefined && refOf(o) === refOf(n));
  pairWhere((o, n) => JSON.stringify(o) === JSON.stringify(n));
  if (oldFree.size * newFree.size > MAX_SCORED_PAIRS) return pairs;
  const oldMarks = new Map([...oldFree].map((i) => [i, signatureOf(before[i], oldSchemas)] as const));
  const newMarks = new Map([...newFree].map((j) => [j, signatureOf(after[j], newSchemas)] as const));
  const scored: [number, number, number][] = [];
  for (const [i, a] of oldMarks) {
    for (const [j, b] of newMarks) {
      let shared = 0;
      for (const mark of a) if (b.has(mark)) shared++;
      const score = shared / (a.size + b.size - shared || 1);
      if (score > ALIKE) scored.push([score, i, j]);
    }
  }
  scored.sort((x, y) => y[0] - x[0] || x[1] - y[1] || x[2] - y[2]);
  for (const [, i, j] of scored) {
    if (!oldFree.has(i) || !newFree.has(j)) continue;
    pairs.push([i, j]);
    oldFree.delete(i);
    newFree.delete(j);
  }
  return pairs;
}

/** What an alternative looks like, to tell which of the other side's it is. */
function signatureOf(raw: unknown, schemas: Schemas): Set<string> {
  const marks = new Set<string>();
  const ref = refOf(raw);
  if (ref !== undefined) marks.add(`ref ${ref}`);
  const flat = flatten(raw, schemas);
  for (const type of flat?.types ?? []) marks.add(`type ${type}`);
  for (const [name, member] of flat?.properties ?? []) {
    marks.add(`member ${name}`);
    const only = flatten(member, schemas)?.enum;
    if (only?.length === 1) marks.add(`value ${name} ${JSON.stringify(only[0])}`);
  }
  return marks;
}

/** "Cat" for a $ref, else its title, else the schema in brief. */
function alternativeName(raw: unknown, schemas: Schemas): string {
  const ref = refOf(raw);
  if (ref !== undefined)
    return ref
      .slice(ref.lastIndexOf("/") + 1)
      .replaceAll("~1", "/")
      .replaceAll("~0", "~");
  const title = (raw as { title?: unknown } | null)?.title;
  return typeof title === "string" ? JSON.stringify(title) : `(${describeSchema(raw, schemas)})`;
}

/** How deep into an alternative its members are read: as deep as recorded usage reads a body. */
const MAX_MARK_DEPTH = 8;
/** A member that takes any value. */
const ANY_VALUE: unique symbol = Symbol("any value");
type Values = ReadonlySet<string> | typeof ANY_VALUE;

/**
 * What tells the alternative at `index` from its siblings, as recorded usage would show it: the
 * members (pointers from `pointer`, the choice's own) none of the others has, and at a member
 * they share, the values none of the others takes.
 */
function marksOf(
  index: number,
  branches: readonly unknown[],
  schemas: Schemas,
  pointer: string,
): AlternativeMarks {
  const own = membersOf(branches[index], schemas, pointer);
  const others = branches.filter((_, i) => i !== index).map((branch) => membersOf(branch, schemas, pointer));
  const members: string[] = [];
  const values: Record<string, string[]> = {};
  for (const [at, taken] of own) {
    const elsewhere = others.map((other) => other.get(at)).filter((v): v is Values => v !== undefined);
    if (elsewhere.length === 0) {
      members.push(at);
      continue;
    }
    if (taken === ANY_VALUE || elsewhere.includes(ANY_VALUE)) continue;
    const only = [...taken].filter((value) =>
      elsewhere.every((other) => other === ANY_VALUE || !other.has(value)),
    );
    if (only.length > 0) values[at] = only;
  }
  return { members, values };
}

/** The members an alternative may hold, by pointer, with the values each takes (enum, const) or any. */
function membersOf(raw: unknown, schemas: Schemas, pointer: string): Map<string, Values> {
  const found = new Map<string, Values>();
  const seen = new Set<string>();
  const note = (at: string, values: Values) => {
    const held = found.get(at);
    if (held === undefined) found.set(at, values);
    else if (held !== ANY_VALUE)
      found.set(at, values === ANY_VALUE ? ANY_VALUE : new Set([...held, ...values]));
  };
  const walk = (value: unknown, at: string, depth: number): void => {
    if (depth > MAX_MARK_DEPTH) return;
    const ref = refOf(value);
    if (ref !== undefined) {
      if (seen.has(`${ref} ${at}`)) return;
      seen.add(`${ref} ${at}`);
    }
    const flat = flatten(value, schemas);
    if (flat === undefined) return;
    for (const [name, member] of flat.properties) {
      const below = `${at}/${escapePointerToken(name)}`;
      const listed = flatten(member, schemas)?.enum;
      note(
        below,
        listed === undefined
          ? ANY_VALUE
          : new Set(listed.map((v) => (typeof v === "string" ? v : JSON.stringify(v)))),
      );
      walk(member, below, depth + 1);
    }
    if (flat.additional !== undefined) {
      note(`${at}/*`, ANY_VALUE);
      walk(flat.additional, `${at}/*`, depth + 1);
    }
    if (flat.items !== undefined) walk(flat.items, `${at}/-`, depth + 1);
    for (const branch of flat.choice?.branches ?? []) walk(branch, at, depth + 1);
  };
  walk(raw, pointer, 0);
  return found;
}

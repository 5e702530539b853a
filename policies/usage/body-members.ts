// The members of a JSON request body, as pointers into the operation's own schema: the layout of
// their bits is read once from the document, and each body is walked once against it. A member
// the schema does not name is a bit only where the schema takes any (`additionalProperties`: `*`);
// array items are `-`; an enum (or const) member's values are bits of their own. Nothing else a
// client wrote is kept. A oneOf's or anyOf's alternatives lay their members out at the same
// pointers: a member only one alternative has tells who sent that shape.
//
// The walk follows a tree of the layout's pointers built once (MemberNode), by the member names
// as a body writes them: a body costs a map lookup per member it holds, never a pointer's text.
import { escapePointerToken } from "../../src/json/pointer.ts";

/** How deep into a schema and a body the walk goes: deeper than the members a review names. */
export const MAX_MEMBER_DEPTH = 8;
/** Members of one operation's body given a bit: the bits of a row stay a few words. */
export const MAX_MEMBERS = 256;

export interface MemberLayout {
  /** Pointer -> bit. */
  readonly members: ReadonlyMap<string, number>;
  /** Pointer -> value as text -> bit. */
  readonly values: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** Pointers with members or items below them: where the walk goes on. */
  readonly containers: ReadonlySet<string>;
  /** The same as a tree from the value itself (""), which a body is walked along. */
  readonly root: MemberNode;
}

/** One pointer of a layout: what a body's value there may set. */
export interface MemberNode {
  /** The member's bit; -1 for the value itself and for array items. */
  readonly bit: number;
  /** Members below it by their name as JSON writes it (unescaped). */
  readonly named: ReadonlyMap<string, MemberNode>;
  /** Any other member (`*`), where the schema takes those. */
  readonly other: MemberNode | undefined;
  /** Its array's items (`-`). */
  readonly items: MemberNode | undefined;
  /** Whether an object here is walked into. */
  readonly container: boolean;
  /** An enum member's values as text -> bit. */
  readonly values: ReadonlyMap<string, number> | undefined;
}

type Schemas = Readonly<Record<string, unknown>>;

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** Follows `#/components/schemas/...` $refs, a bounded number of hops. */
function resolve(value: unknown, schemas: Schemas): Record<string, unknown> | undefined {
  let node = value;
  for (let hops = 0; hops <= MAX_MEMBER_DEPTH; hops++) {
    if (!isObject(node)) return undefined;
    const ref = node.$ref;
    if (typeof ref !== "string") return node;
    const prefix = "#/components/schemas/";
    if (!ref.startsWith(prefix)) return node;
    node = schemas[ref.slice(prefix.length).replaceAll("~1", "/").replaceAll("~0", "~")];
  }
  return undefined;
}

/**
 * The layout of a body schema's members, bits numbered from `next()` on. Linear in the schema:
 * every (schema, pointer) pair is visited once, and the walk stops at the depth and member caps.
 */
export function memberLayout(
  schema: unknown,
  schemas: Schemas,
  bit: (pointer: string, value?: string) => number | undefined,
): MemberLayout {
  const members = new Map<string, number>();
  const values = new Map<string, Map<string, number>>();
  const containers = new Set<string>();
  const seen = new Set<string>();
  const addMember = (pointer: string) => {
    if (members.has(pointer) || members.size >= MAX_MEMBERS) return members.has(pointer);
    const b = bit(pointer);
    if (b === undefined) return false;
    members.set(pointer, b);
    return true;
  };
  const walk = (raw: unknown, pointer: string, depth: number): void => {
    if (depth > MAX_MEMBER_DEPTH) return;
    const ref = isObject(raw) && typeof raw.$ref === "string" ? raw.$ref : undefined;
    if (ref !== undefined) {
      const key = `${ref} ${pointer}`;
      if (seen.has(key)) return;
      seen.add(key);
    }
    const node = resolve(raw, schemas);
    if (node === undefined) return;
    for (const keyword of ["allOf", "anyOf", "oneOf"]) {
      const branches = node[keyword];
      if (Array.isArray(branches)) for (const branch of branches) walk(branch, pointer, depth + 1);
    }
    // A const is an enum of one: a oneOf's discriminator, which tells its alternatives apart.
    const listed = Array.isArray(node.enum) ? node.enum : "const" in node ? [node.const] : undefined;
    if (pointer !== "" && listed !== undefined && members.has(pointer)) {
      let bits = values.get(pointer);
      for (const member of listed) {
        const text = typeof member === "string" ? member : JSON.stringify(member);
        if (bits?.has(text)) continue;
        const b = bit(pointer, text);
        if (b === undefined) break;
        bits ??= new Map();
        bits.set(text, b);
        values.set(pointer, bits);
      }
    }
    if (isObject(node.properties)) {
      for (const [name, member] of Object.entries(node.properties)) {
        const at = `${pointer}/${escapePointerToken(name)}`;
        if (!addMember(at)) continue;
        containers.add(pointer);
        walk(member, at, depth + 1);
      }
    }
    if (isObject(node.additionalProperties)) {
      const at = `${pointer}/*`;
      if (addMember(at)) {
        containers.add(pointer);
        walk(node.additionalProperties, at, depth + 1);
      }
    }
    if (isObject(node.items)) {
      containers.add(`${pointer}/-`);
      walk(node.items, `${pointer}/-`, depth + 1);
    }
  };
  walk(schema, "", 0);
  return { members, values, containers, root: treeOf(members, values, containers) };
}

interface BuiltNode {
  bit: number;
  readonly named: Map<string, BuiltNode>;
  other: BuiltNode | undefined;
  items: BuiltNode | undefined;
  container: boolean;
  values: ReadonlyMap<string, number> | undefined;
}

/** The layout's pointers as a tree: a node per pointer, reached from its parent by the last token. */
function treeOf(
  members: ReadonlyMap<string, number>,
  values: ReadonlyMap<string, ReadonlyMap<string, number>>,
  containers: ReadonlySet<string>,
): MemberNode {
  const nodes = new Map<string, BuiltNode>();
  const nodeAt = (pointer: string): BuiltNode => {
    let node = nodes.get(pointer);
    if (node === undefined) {
      node = {
        bit: -1,
        named: new Map(),
        other: undefined,
        items: undefined,
        container: false,
        values: undefined,
      };
      nodes.set(pointer, node);
    }
    return node;
  };
  const parentOf = (pointer: string) => {
    const cut = pointer.lastIndexOf("/");
    return { parent: nodeAt(pointer.slice(0, cut)), token: pointer.slice(cut + 1) };
  };
  const root = nodeAt("");
  for (const [pointer, bit] of members) {
    const node = nodeAt(pointer);
    node.bit = bit;
    const { parent, token } = parentOf(pointer);
    // A member named "*" and the members the schema does not name share the pointer, as before.
    if (token === "*") parent.other = node;
    parent.named.set(unescapePointerToken(token), node);
  }
  for (const pointer of containers) {
    const node = nodeAt(pointer);
    node.container = true;
    if (pointer.endsWith("/-")) parentOf(pointer).parent.items = node;
  }
  for (const [pointer, bits] of values) {
    nodeAt(pointer).values = bits;
    if (pointer.endsWith("/-")) parentOf(pointer).parent.items = nodeAt(pointer);
  }
  return root;
}

function unescapePointerToken(token: string): string {
  return token.replaceAll("~1", "/").replaceAll("~0", "~");
}

/** Sets the bit of each member (and enum value) a parsed body holds: one walk over the body. */
export function setSentMembers(layout: MemberLayout, body: unknown, set: (bit: number) => void): void {
  visit(layout.root, body, 0, set);
}

function visit(node: MemberNode, value: unknown, depth: number, set: (bit: number) => void): void {
  if (depth > MAX_MEMBER_DEPTH) return;
  if (Array.isArray(value)) {
    const items = node.items;
    if (items === undefined) return;
    for (const item of value) visit(items, item, depth + 1, set);
    return;
  }
  if (value !== null && typeof value === "object") {
    if (!node.container) return;
    const object = value as Record<string, unknown>;
    for (const name of Object.keys(object)) {
      const member = node.named.get(name) ?? node.other;
      if (member === undefined) continue;
      set(member.bit);
      visit(member, object[name], depth + 1, set);
    }
    return;
  }
  const bits = node.values;
  if (bits === undefined) return;
  const bit = bits.get(typeof value === "string" ? value : JSON.stringify(value));
  if (bit !== undefined) set(bit);
}

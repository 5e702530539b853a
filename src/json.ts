// JSON bodies as the interface means them: int64 integers are exact, and what is forwarded is
// always the original bytes. The common case stays on plain JSON.parse; the source text of
// numbers is only looked at when the raw text could hold a non-literal or over-long integer.

import {
  CONTROL_CHARACTERS,
  INTEGER_LITERAL,
  JSON_ESCAPE,
  JSON_NUMBER,
  MAY_HOLD_PROTOTYPE_KEY,
  MAY_NEED_NUMBER_SOURCE,
  quotedClientText,
  SIXTEEN_DIGITS,
} from "./untrusted-text.ts";

export type JsonParseResult =
  | { readonly ok: true; readonly value: unknown }
  /** malformed: not JSON at all; invalid: JSON the gateway refuses (depth, keys, integer forms). */
  | { readonly ok: false; readonly problem: "malformed" | "invalid"; readonly message: string };

interface ReviverContext {
  readonly source?: string;
}
type SourceReviver = (this: unknown, key: string, value: unknown, context: ReviverContext) => unknown;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Parses a request body. Refuses nesting deeper than maxDepth, the keys __proto__, constructor
 * and prototype, integral numbers not written as integer literals (1.0, 1e3) and integer
 * literals outside the int64 range.
 */
export function parseRequestJson(text: string, maxDepth: number): JsonParseResult {
  const depth = nestingDepth(text);
  if (depth > maxDepth) {
    return { ok: false, problem: "invalid", message: `body nests deeper than ${maxDepth} levels` };
  }
  let problem: string | undefined;
  let value: unknown;
  try {
    if (MAY_NEED_NUMBER_SOURCE.test(text)) {
      const reviver: SourceReviver = (key, parsed, context) => {
        if (problem === undefined && typeof parsed === "number" && context.source !== undefined) {
          problem = integerProblem(key, parsed, context.source);
        }
        return parsed;
      };
      value = JSON.parse(text, reviver as Parameters<typeof JSON.parse>[1]);
    } else {
      value = JSON.parse(text);
    }
  } catch {
    return { ok: false, problem: "malformed", message: describeSyntaxError(text, "body") };
  }
  if (problem !== undefined) return { ok: false, problem: "invalid", message: problem };
  const duplicate = duplicateKey(text);
  if (duplicate !== undefined) {
    return { ok: false, problem: "invalid", message: `${duplicate} is given more than once` };
  }
  if (MAY_HOLD_PROTOTYPE_KEY.test(text)) {
    const key = findPrototypeKey(value);
    if (key !== undefined) {
      return { ok: false, problem: "invalid", message: `${key} is a forbidden property name` };
    }
  }
  return { ok: true, value };
}

/**
 * Why a text is not JSON, naming where: "/categoryId is not valid JSON (line 1, column 29)".
 * Only for texts JSON.parse refused, so its cost never touches a valid request. The message
 * quotes no value from the text (V8's own message echoes a slice of it), only member names on
 * the way to the error, shortened.
 */
/**
 * JSON.parse for a file's text, whose error is one line saying where (V8's message quotes the
 * text, newlines and all, which would also print a secret the file holds).
 */
export function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(describeSyntaxError(text, "the file"));
  }
}

export function describeSyntaxError(text: string, subject: string): string {
  const { offset, pointer } = locateSyntaxError(text);
  if (offset >= text.length) return `${pointer || subject} is not valid JSON (it ends too early)`;
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return `${pointer || subject} is not valid JSON (line ${line}, column ${offset - lineStart + 1})`;
}

const STOP = Symbol("stop");

/** The offset of the first syntax error and the JSON pointer of the member it is in. */
function locateSyntaxError(text: string): { offset: number; pointer: string } {
  const path: string[] = [];
  let i = 0;
  const fail = (): never => {
    throw STOP;
  };
  const space = () => {
    for (let c = text.charCodeAt(i); c === 32 || c === 9 || c === 10 || c === 13; c = text.charCodeAt(++i));
  };
  const string = (): string => {
    if (text[i] !== '"') fail();
    const start = i++;
    for (;;) {
      const c = text.charCodeAt(i);
      if (Number.isNaN(c) || c < 0x20) fail();
      if (c === 34) return JSON.parse(text.slice(start, ++i)) as string;
      if (c === 92) {
        JSON_ESCAPE.lastIndex = i;
        if (!JSON_ESCAPE.test(text)) fail();
        i = JSON_ESCAPE.lastIndex;
      } else i++;
    }
  };
  const literal = (word: string) => {
    if (!text.startsWith(word, i)) fail();
    i += word.length;
  };
  // An object or an array: `entry` reads one member or element and pushes its path segment.
  const container = (close: string, entry: (index: number) => void): void => {
    i++;
    space();
    if (text[i] === close) return void i++;
    for (let index = 0, more = true; more; index++) {
      entry(index);
      space();
      // The entry stays on the path until its separator: "07" fails after "0" parsed.
      if (text[i] !== "," && text[i] !== close) fail();
      more = text[i++] === ",";
      path.pop();
    }
  };
  const member = (): void => {
    space();
    path.push(string());
    space();
    if (text[i] !== ":") fail();
    i++;
    value();
  };
  const element = (index: number): void => {
    path.push(String(index));
    value();
  };
  const value = (): void => {
    space();
    const c = text[i];
    if (c === "{") return container("}", member);
    if (c === "[") return container("]", element);
    if (c === '"') return void string();
    if (c === "t") return literal("true");
    if (c === "f") return literal("false");
    if (c === "n") return literal("null");
    JSON_NUMBER.lastIndex = i;
    if (!JSON_NUMBER.test(text)) fail();
    i = JSON_NUMBER.lastIndex;
  };
  try {
    value();
    space();
    if (i < text.length) fail();
  } catch (error) {
    if (error !== STOP) throw error;
  }
  return { offset: i, pointer: path.map(pointerSegment).join("") };
}

/** A member name as one JSON pointer token (RFC 6901): "~" becomes "~0", then "/" becomes "~1". */
export function escapePointerToken(name: string): string {
  return name.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** The member name a JSON pointer token stands for: "~1" back to "/" first, then "~0" to "~". */
export function unescapePointerToken(token: string): string {
  return token.replaceAll("~1", "/").replaceAll("~0", "~");
}

function pointerSegment(name: string): string {
  const escaped = escapePointerToken(name);
  // A member name is the client's text: printable in a message, and no key it may hold.
  return `/${quotedClientText(escaped.replace(CONTROL_CHARACTERS, "?"))}`;
}

function integerProblem(key: string, value: number, source: string): string | undefined {
  const name = key === "" ? "body" : pointerSegment(key);
  if (INTEGER_LITERAL.test(source)) {
    if (Number.isSafeInteger(value)) return undefined;
    const exact = BigInt(source);
    return exact < INT64_MIN || exact > INT64_MAX ? `${name} must be within the int64 range` : undefined;
  }
  return Number.isInteger(value)
    ? `${name} must be written as an integer literal (got ${source})`
    : undefined;
}

function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > deepest) deepest = depth;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return deepest;
}

/**
 * The first member name given twice in one object, as a pointer ("/name"), of a text JSON.parse
 * accepted. JSON.parse keeps the last; a backend's parser may keep the first: the body it acts
 * on would not be the body the gateway validated.
 */
function duplicateKey(text: string): string | undefined {
  // One entry per open container: the names seen so far in an object, the index in an array;
  // and, for an object, the member being read. The pointer is only spelled out for a duplicate:
  // escaping every member name of every valid body was work no request needed.
  const open: (Set<string> | number)[] = [];
  const names: string[] = [];
  let expectName = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      const start = i;
      let escaped = false;
      for (i++; text.charCodeAt(i) !== 34; i++) {
        if (text.charCodeAt(i) === 92 /* \ */) {
          escaped = true;
          i++;
        }
      }
      if (!expectName) continue;
      const name = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
      const seen = open[open.length - 1] as Set<string>;
      if (seen.has(name)) return `${pointerTo(open, names)}${pointerSegment(name)}`;
      seen.add(name);
      names[names.length - 1] = name;
      expectName = false;
    } else if (c === 123 /* { */) {
      open.push(new Set());
      names.push("");
      expectName = true;
    } else if (c === 91 /* [ */) {
      open.push(0);
      names.push("");
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      open.pop();
      names.pop();
      expectName = false;
    } else if (c === 44 /* , */) {
      const top = open[open.length - 1];
      if (typeof top === "number") open[open.length - 1] = top + 1;
      else expectName = true;
    }
  }
  return undefined;
}

/** The pointer of the innermost open container, from duplicateKey's stacks. */
function pointerTo(open: readonly (Set<string> | number)[], names: readonly string[]): string {
  let pointer = "";
  for (let depth = 0; depth < open.length - 1; depth++) {
    const entry = open[depth];
    pointer += typeof entry === "number" ? `/${entry}` : pointerSegment(names[depth] as string);
  }
  return pointer;
}

/** The JSON pointer of the first forbidden member name, built only once one is found. */
function findPrototypeKey(value: unknown): string | undefined {
  if (value === null || typeof value !== "object") return undefined;
  for (const key of Object.keys(value)) {
    if (key === "__proto__" || key === "constructor" || key === "prototype")
      return `/${escapePointerToken(key)}`;
    const found = findPrototypeKey((value as Record<string, unknown>)[key]);
    if (found !== undefined) return `/${escapePointerToken(key)}${found}`;
  }
  return undefined;
}

/** True when an integer literal in the text may not survive JSON.parse exactly (beyond 2^53). */
export function mayHoldUnsafeIntegers(text: string): boolean {
  return SIXTEEN_DIGITS.test(text);
}

/**
 * Parses with integers beyond 2^53 kept exact as BigInt, for comparing ids. Costs a reviver,
 * so callers use it only when mayHoldUnsafeIntegers says so. Undefined when the text cannot be
 * parsed that way: with a reviver JSON.parse recurses, and a text nested deep enough (a backend's
 * answer is not held to the request's depth limit) overflows the stack, which plain JSON.parse
 * of the same text does not.
 */
export function parseWithExactIntegers(text: string): unknown {
  const reviver: SourceReviver = (_key, parsed, context) =>
    typeof parsed === "number" &&
    !Number.isSafeInteger(parsed) &&
    context.source !== undefined &&
    INTEGER_LITERAL.test(context.source)
      ? BigInt(context.source)
      : parsed;
  try {
    return JSON.parse(text, reviver as Parameters<typeof JSON.parse>[1]);
  } catch {
    return undefined;
  }
}

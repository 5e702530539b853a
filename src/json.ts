// JSON bodies as the interface means them: int64 integers are exact, and what is forwarded is
// always the original bytes. The common case stays on plain JSON.parse; the source text of
// numbers is only looked at when the raw text could hold a non-literal or over-long integer.

export type JsonParseResult =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly message: string };

interface ReviverContext {
  readonly source?: string;
}
type SourceReviver = (this: unknown, key: string, value: unknown, context: ReviverContext) => unknown;

const INTEGER_LITERAL = /^-?(?:0|[1-9][0-9]*)$/;
// A digit followed by '.', 'e' or 'E', or 16+ digits in a row: only then can a number be
// written as a non-literal integer (1.0, 1e3) or exceed 2^53. Strings may trigger it too;
// that only costs the slower, still correct, path.
const MAY_NEED_NUMBER_SOURCE = /[0-9][.eE]|[0-9]{16}/;
const PROTOTYPE_KEY = /"(?:__proto__|constructor|prototype)"\s*:/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Parses a request body. Refuses nesting deeper than maxDepth, the keys __proto__, constructor
 * and prototype, integral numbers not written as integer literals (1.0, 1e3) and integer
 * literals outside the int64 range.
 */
export function parseRequestJson(text: string, maxDepth: number): JsonParseResult {
  const depth = nestingDepth(text);
  if (depth > maxDepth) return { ok: false, message: `body nests deeper than ${maxDepth} levels` };
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
    return { ok: false, message: "body is not valid JSON" };
  }
  if (problem !== undefined) return { ok: false, message: problem };
  if (PROTOTYPE_KEY.test(text)) {
    const key = findPrototypeKey(value, "");
    if (key !== undefined) return { ok: false, message: `${key} is a forbidden property name` };
  }
  return { ok: true, value };
}

function integerProblem(key: string, value: number, source: string): string | undefined {
  const name = key === "" ? "body" : `/${key}`;
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

function findPrototypeKey(value: unknown, pointer: string): string | undefined {
  if (value === null || typeof value !== "object") return undefined;
  for (const key of Object.keys(value)) {
    const here = `${pointer}/${key}`;
    if (key === "__proto__" || key === "constructor" || key === "prototype") return here;
    const found = findPrototypeKey((value as Record<string, unknown>)[key], here);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** True when an integer literal in the text may not survive JSON.parse exactly (beyond 2^53). */
export function mayHoldUnsafeIntegers(text: string): boolean {
  return /[0-9]{16}/.test(text);
}

/**
 * Parses with integers beyond 2^53 kept exact as BigInt, for comparing ids. Costs a reviver,
 * so callers use it only when mayHoldUnsafeIntegers says so.
 */
export function parseWithExactIntegers(text: string): unknown {
  const reviver: SourceReviver = (_key, parsed, context) =>
    typeof parsed === "number" &&
    !Number.isSafeInteger(parsed) &&
    context.source !== undefined &&
    INTEGER_LITERAL.test(context.source)
      ? BigInt(context.source)
      : parsed;
  return JSON.parse(text, reviver as Parameters<typeof JSON.parse>[1]);
}

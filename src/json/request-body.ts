// JSON bodies as the interface means them: int64 integers are exact, and what is forwarded is
// always the original bytes. The common case stays on plain JSON.parse; the source text of
// numbers is only looked at when the raw text could hold a non-literal or over-long integer.
import { duplicateKey } from "./duplicate-keys.ts";
import { integerProblem, type SourceReviver } from "./integers.ts";
import { escapePointerToken } from "./pointer.ts";
import { describeSyntaxError } from "./syntax-error.ts";

// A digit followed by '.', 'e' or 'E', or 16+ digits in a row: only then can a number be
// written as a non-literal integer (1.0, 1e3) or exceed 2^53. Strings may trigger it too;
// that only costs the slower, still correct, path.
const MAY_NEED_NUMBER_SOURCE = /[0-9][.eE]|[0-9]{16}/;
/** A key that could be __proto__ & co. once decoded: written plainly, or with any \u escape. */
const MAY_HOLD_PROTOTYPE_KEY = /"(?:__proto__|constructor|prototype)"\s*:|\\u/;

export type JsonParseResult =
  | { readonly ok: true; readonly value: unknown }
  /** malformed: not JSON at all; invalid: JSON the gateway refuses (depth, keys, integer forms). */
  | { readonly ok: false; readonly problem: "malformed" | "invalid"; readonly message: string };

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

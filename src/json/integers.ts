// Integers as the interface means them: int64, exact, and written as integer literals. JSON.parse
// rounds beyond 2^53 and reads 1.0 and 1e3 as integers; only the number's source text tells.
import { clientPointerSegment } from "./pointer.ts";

/** An integer as a parameter or a JSON number may write it: no sign but "-", no leading zero. */
export const INTEGER_LITERAL = /^-?(?:0|[1-9][0-9]*)$/;
/** 16 digits in a row: an integer literal that may be beyond 2^53. */
const SIXTEEN_DIGITS = /[0-9]{16}/;

interface ReviverContext {
  readonly source?: string;
}
/** A JSON.parse reviver that is also given each number's source text. */
export type SourceReviver = (this: unknown, key: string, value: unknown, context: ReviverContext) => unknown;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * What is wrong with one number of a request body, given its source text: an integral number not
 * written as an integer literal, or an integer literal outside the int64 range.
 */
export function integerProblem(key: string, value: number, source: string): string | undefined {
  const name = key === "" ? "body" : clientPointerSegment(key);
  if (INTEGER_LITERAL.test(source)) {
    if (Number.isSafeInteger(value)) return undefined;
    const exact = BigInt(source);
    return exact < INT64_MIN || exact > INT64_MAX ? `${name} must be within the int64 range` : undefined;
  }
  return Number.isInteger(value)
    ? `${name} must be written as an integer literal (got ${source})`
    : undefined;
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

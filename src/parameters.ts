// Parameters arrive as text. An integer parameter is an integer literal within the range of its
// format (int32, int64) before its schema (minimum, maximum, enum) is asked about the number.

import { INTEGER_LITERAL } from "./json/integers.ts";
import type { ParameterSpec } from "./openapi.ts";

const RANGES: Readonly<Record<string, readonly [bigint, bigint]>> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
};

export type ParameterCheck =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly message: string };

export function checkParameter(spec: ParameterSpec, text: string): ParameterCheck {
  let value: unknown = text;
  if (spec.type === "integer") {
    if (!INTEGER_LITERAL.test(text)) return { ok: false, message: `${spec.name} must be an integer` };
    const number = Number(text);
    const range = spec.format === undefined ? undefined : RANGES[spec.format];
    if (range && (!Number.isSafeInteger(number) || spec.format === "int32")) {
      const exact = BigInt(text);
      if (exact < range[0] || exact > range[1]) {
        return { ok: false, message: `${spec.name} must be within the ${spec.format} range` };
      }
    }
    value = number;
  } else if (spec.type === "number") {
    value = Number(text);
    if (text.trim() === "" || !Number.isFinite(value))
      return { ok: false, message: `${spec.name} must be a number` };
  } else if (spec.type === "boolean") {
    if (text !== "true" && text !== "false")
      return { ok: false, message: `${spec.name} must be true or false` };
    value = text === "true";
  }
  if (!spec.validate(value)) {
    const error = spec.validate.errors?.[0];
    const params = (error?.params ?? {}) as Record<string, unknown>;
    const detail =
      error?.keyword === "enum"
        ? `must be one of ${(params.allowedValues as unknown[]).join(", ")}`
        : (error?.message ?? "is not valid");
    return { ok: false, message: `${spec.name} ${detail}` };
  }
  return { ok: true, value };
}

/**
 * An integer literal as a number, or undefined: for policies that adjust integers before
 * validation. The same literal rule as everywhere else (no sign, leading zeros, point or
 * exponent); the size is not checked, since such a policy clamps what is out of range.
 */
export function parseIntegerLiteral(text: string): number | undefined {
  return INTEGER_LITERAL.test(text) ? Number(text) : undefined;
}

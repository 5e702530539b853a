// The interface's rules beyond the schema (x-gateway-response-rules): a page no longer than its
// limit, items of the status the filter asked for, the resource the path named, a created
// resource that echoes what was sent. Integers beyond 2^53 are compared on their exact source.
import { mayHoldUnsafeIntegers, parseWithExactIntegers } from "../../src/json/integers.ts";
import { isJsonObject } from "../../src/openapi/json-object.ts";
import type { Exchange } from "../../src/policy.ts";
import { excerpt } from "./excerpt.ts";
import type { Rule } from "./plan.ts";
import type { Violation } from "./report.ts";

/** The rule's violation by this answer (value parsed, text its source), or undefined. */
export function checkRule(
  rule: Rule,
  exchange: Exchange,
  value: unknown,
  text: string,
): Violation | undefined {
  switch (rule.rule) {
    case "page-size": {
      if (!Array.isArray(value)) return undefined;
      const given = parameterText(exchange, rule.parameter);
      const limit = given === undefined ? rule.fallback : Number(given);
      if (limit === undefined || !(value.length > limit)) return undefined;
      return {
        rule: rule.rule,
        pointer: `/${limit}`,
        message: `the page holds ${value.length} items, more than ${rule.parameter}=${limit}`,
        excerpt: `${value.length} items`,
      };
    }
    case "filter": {
      const wanted = parameterText(exchange, rule.parameter);
      if (wanted === undefined || !Array.isArray(value)) return undefined;
      for (let index = 0; index < value.length; index++) {
        const item: unknown = value[index];
        const field = isJsonObject(item) ? item[rule.field] : undefined;
        if (equalsText(field, wanted, text, index, rule.field)) continue;
        const shown = excerpt(exactField(text, index, rule.field, field), rule.field, exchange);
        return {
          rule: rule.rule,
          pointer: `/${index}/${rule.token}`,
          message: `item ${index} has ${rule.field} ${shown}, the filter asked for ${rule.parameter}=${excerpt(wanted, rule.parameter, exchange)}`,
          excerpt: shown,
        };
      }
      return undefined;
    }
    case "identity": {
      const wanted = parameterText(exchange, rule.parameter);
      if (wanted === undefined || !isJsonObject(value)) return undefined;
      const field = value[rule.field];
      if (equalsText(field, wanted, text, undefined, rule.field)) return undefined;
      const shown = excerpt(exactField(text, undefined, rule.field, field), rule.field, exchange);
      return {
        rule: rule.rule,
        pointer: `/${rule.token}`,
        message: `the answer's ${rule.field} is ${shown}, the request asked for ${rule.parameter}=${excerpt(wanted, rule.parameter, exchange)}`,
        excerpt: shown,
      };
    }
    case "echo": {
      if (exchange.body === undefined || !isJsonObject(value)) return undefined;
      const requestText = exchange.body.toString("utf8");
      // Parsed again here, rather than handed over by request validation: policies share no
      // private channel, and only a created resource's answer (small) is compared.
      let sent: unknown;
      try {
        sent = JSON.parse(requestText);
      } catch {
        return undefined; // request validation refuses such bodies; nothing to compare with
      }
      if (!isJsonObject(sent)) return undefined;
      for (const { name, token } of rule.fields) {
        const asked = sent[name];
        if (asked === undefined) continue;
        const got = value[name];
        const same =
          scalarEquals(got, asked) ??
          exactEquals(
            exactField(text, undefined, name, got),
            exactField(requestText, undefined, name, asked),
          );
        if (same) continue;
        const answered = excerpt(exactField(text, undefined, name, got), name, exchange);
        return {
          rule: rule.rule,
          pointer: `/${token}`,
          message: `the answer's ${name} is ${answered}, the request sent ${excerpt(exactField(requestText, undefined, name, asked), name, exchange)}`,
          excerpt: answered,
        };
      }
      return undefined;
    }
  }
}

function parameterText(exchange: Exchange, name: string): string | undefined {
  return exchange.pathParams[name] ?? exchange.query.get(name);
}

/**
 * Whether a JSON value equals a parameter's text. Integers are compared as numbers, and beyond
 * 2^53 on the exact source text of the answer (text, item index, field) rather than the double.
 */
function equalsText(
  value: unknown,
  wanted: string,
  text: string,
  index: number | undefined,
  field: string,
): boolean {
  if (typeof value === "string") return value === wanted;
  if (typeof value === "boolean") return String(value) === wanted;
  if (typeof value !== "number") return false;
  const number = Number(wanted);
  if (wanted.trim() === "" || !Number.isFinite(number)) return false;
  if (!Number.isInteger(value) || (Number.isSafeInteger(value) && Number.isSafeInteger(number))) {
    return value === number;
  }
  let exact: bigint;
  try {
    exact = BigInt(wanted);
  } catch {
    return false;
  }
  const source = exactField(text, index, field, value);
  return typeof source === "bigint" ? source === exact : BigInt(source as number) === exact;
}

/** Scalar equality; undefined when two integers beyond 2^53 need their exact source to tell. */
function scalarEquals(a: unknown, b: unknown): boolean | undefined {
  if (typeof a === "number" && typeof b === "number") {
    if (Number.isInteger(a) && Number.isInteger(b) && !(Number.isSafeInteger(a) && Number.isSafeInteger(b))) {
      return undefined;
    }
    return a === b;
  }
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return a === b;
  return JSON.stringify(a) === JSON.stringify(b);
}

function exactEquals(a: unknown, b: unknown): boolean {
  const big = (v: unknown) =>
    typeof v === "bigint" ? v : typeof v === "number" && Number.isInteger(v) ? BigInt(v) : v;
  return big(a) === big(b);
}

/**
 * The field as written in the source text, exact beyond 2^53 (BigInt); the parsed value when the
 * text holds no long integer. Only called when a compared integer is beyond 2^53, or to describe
 * a violation.
 */
function exactField(text: string, index: number | undefined, field: string, parsed: unknown): unknown {
  if (typeof parsed !== "number" || Number.isSafeInteger(parsed) || !mayHoldUnsafeIntegers(text))
    return parsed;
  // Too deep to parse exactly: compared as parsed (a near miss beyond 2^53 may go unseen, or an
  // exact match be reported), rather than not at all.
  const root = parseWithExactIntegers(text);
  if (root === undefined) return parsed;
  const holder = index === undefined ? root : Array.isArray(root) ? root[index] : undefined;
  return isJsonObject(holder) ? holder[field] : parsed;
}

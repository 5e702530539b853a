// Whether one answer keeps the contract: its status, its schema and the interface's rules. Cheap
// when it does; what describes a violation (pointers, excerpts) is built only once one is found.
import type { IncomingHttpHeaders } from "node:http";
import type { ErrorObject } from "ajv";
import {
  escapePointerToken,
  mayHoldUnsafeIntegers,
  parseWithExactIntegers,
  unescapePointerToken,
} from "../../src/json.ts";
import type { Exchange, UpstreamAnswer } from "../../src/policy.ts";
import { describeSchemaError, untrustedValueWording } from "../../src/schema-error.ts";
import { cutText, JSON_FAMILY_MEDIA_TYPE } from "../../src/untrusted-text.ts";
import { excerpt, headerExcerpt, jsonErrorExcerpt } from "./excerpt.ts";
import type { OperationPlan, Rule } from "./plan.ts";
import type { Violation } from "./report.ts";

const MESSAGE_MAX = 200;

/** The violations of one answer, or undefined when it keeps the contract. */
export function judge(
  plan: OperationPlan,
  exchange: Exchange,
  answer: UpstreamAnswer,
): Violation[] | undefined {
  const { status } = answer;
  // The backend failing or shedding load is an upstream fault, not drift: it passes through with
  // its Retry-After, and the core counts it (gateway_upstream_error_responses_total).
  if (status >= 500 || status === 429) return undefined;
  const declared = plan.statuses[status];
  if (declared === undefined) {
    // A 304 answers the client's own conditional request: HTTP caching, not the interface.
    if (status === 304 && isConditional(exchange.req.headers)) return undefined;
    return [
      {
        rule: "status",
        pointer: "",
        message: `status ${status} is not declared for ${plan.operation.id}`,
        excerpt: `status ${status}`,
      },
    ];
  }
  const { validate } = declared;
  if (validate === undefined) return undefined;
  const contentType = answer.headers["content-type"];
  if (contentType === undefined || !JSON_FAMILY_MEDIA_TYPE.test(contentType)) {
    return [
      {
        rule: "media-type",
        pointer: "",
        message: `the answer is ${contentType === undefined ? "without Content-Type" : "not JSON"}, the document declares application/json`,
        excerpt: headerExcerpt(String(contentType ?? "none"), exchange),
      },
    ];
  }
  if (answer.oversized) {
    const length = answer.headers["content-length"];
    return [
      {
        rule: "size",
        pointer: "",
        message: "the answer is over server.maxResponseBodyBytes and could not be checked",
        excerpt: length === undefined ? "unknown length" : `content-length ${length}`,
      },
    ];
  }
  if (answer.fault !== undefined) {
    return [
      {
        rule: "encoding",
        pointer: "",
        message: answer.fault,
        excerpt: headerExcerpt(String(answer.headers["content-encoding"] ?? "none"), exchange),
      },
    ];
  }
  // No body to look at: HEAD, or a status without one.
  if (answer.body === undefined) return undefined;
  const text = answer.body.toString("utf8");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return [
      {
        rule: "json",
        pointer: "",
        message: "the answer is not valid JSON",
        excerpt: jsonErrorExcerpt(text, (error as Error).message, exchange),
      },
    ];
  }
  if (!validate(value)) return [schemaViolation(validate.errors, value, exchange)];
  if (declared.errorObject && isObject(value) && value.status !== status) {
    // A client that reads the body, not the status line, would act on the wrong status.
    const shown = excerpt(value.status, "status", exchange);
    return [
      {
        rule: "error-status",
        pointer: "/status",
        message: `the Error object's status is ${shown}, the answer's is ${status}`,
        excerpt: shown,
      },
    ];
  }
  let found: Violation[] | undefined;
  for (const rule of declared.rules) {
    const violation = checkRule(rule, exchange, value, text);
    if (violation === undefined) continue;
    if (found === undefined) found = [];
    found.push(violation);
  }
  return found;
}

function checkRule(rule: Rule, exchange: Exchange, value: unknown, text: string): Violation | undefined {
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
        const field = isObject(item) ? item[rule.field] : undefined;
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
      if (wanted === undefined || !isObject(value)) return undefined;
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
      if (exchange.body === undefined || !isObject(value)) return undefined;
      const requestText = exchange.body.toString("utf8");
      // Parsed again here, rather than handed over by request validation: policies share no
      // private channel, and only a created resource's answer (small) is compared.
      let sent: unknown;
      try {
        sent = JSON.parse(requestText);
      } catch {
        return undefined; // request validation refuses such bodies; nothing to compare with
      }
      if (!isObject(sent)) return undefined;
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
  return isObject(holder) ? holder[field] : parsed;
}

function schemaViolation(
  errors: ErrorObject[] | null | undefined,
  value: unknown,
  exchange: Exchange,
): Violation {
  const error = errors?.[0];
  if (!error)
    return { rule: "schema", pointer: "", message: "the answer does not match its schema", excerpt: "" };
  const params = error.params as Record<string, unknown>;
  let pointer = error.instancePath;
  if (error.keyword === "required") pointer += `/${escapePointerToken(String(params.missingProperty))}`;
  else if (error.keyword === "additionalProperties")
    pointer += `/${escapePointerToken(String(params.additionalProperty))}`;
  const at = valueAt(value, error.instancePath);
  const name = lastToken(error.instancePath);
  return {
    rule: `schema:${error.keyword}`,
    pointer,
    message:
      error.keyword === "required"
        ? `${pointer} is required`
        : cutText(describeSchemaError(errors, untrustedValueWording("the answer")), MESSAGE_MAX),
    excerpt: excerpt(at, name, exchange),
  };
}

function isConditional(headers: IncomingHttpHeaders): boolean {
  return headers["if-none-match"] !== undefined || headers["if-modified-since"] !== undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function lastToken(pointer: string): string {
  const slash = pointer.lastIndexOf("/");
  return slash === -1 ? "" : unescapePointerToken(pointer.slice(slash + 1));
}

function valueAt(value: unknown, pointer: string): unknown {
  if (pointer === "") return value;
  let node = value;
  for (const raw of pointer.slice(1).split("/")) {
    const token = unescapePointerToken(raw);
    if (Array.isArray(node)) node = node[Number(token)];
    else if (isObject(node)) node = node[token];
    else return undefined;
  }
  return node;
}

// Whether one answer keeps the contract: its status, its schema and the interface's rules. Cheap
// when it does; what describes a violation (pointers, excerpts) is built only once one is found.
import type { IncomingHttpHeaders } from "node:http";
import type { ErrorObject } from "ajv";
import { escapePointerToken, unescapePointerToken } from "../../src/json/pointer.ts";
import { JSON_FAMILY_MEDIA_TYPE } from "../../src/media-types.ts";
import { isJsonObject } from "../../src/openapi/json-object.ts";
import type { Exchange, UpstreamAnswer } from "../../src/policy.ts";
import { cutText } from "../../src/redaction.ts";
import { describeSchemaError, untrustedValueWording } from "../../src/schema-error.ts";
import { excerpt, headerExcerpt, jsonErrorExcerpt } from "./excerpt.ts";
import type { OperationPlan } from "./plan.ts";
import type { Violation } from "./report.ts";
import { checkRule } from "./rules.ts";

/** How an answer's schema error names the value: the backend wrote it. */
const ANSWER_WORDING = untrustedValueWording("the answer");

const MESSAGE_MAX = 200;

/** The violations of one answer, or undefined when it keeps the contract. */
export function violationsOf(
  plan: OperationPlan,
  exchange: Exchange,
  answer: UpstreamAnswer,
): Violation[] | undefined {
  const { status } = answer;
  // The backend failing or shedding load is an upstream fault, not drift: it passes through with
  // its Retry-After, and the core counts it (http_client_request_duration_seconds, by status).
  if (status >= 500 || status === 429) return undefined;
  const declared = plan.statuses[status];
  if (declared === undefined) {
    // A 304 answers the client's own conditional request: HTTP caching, not the interface.
    if (status === 304 && isConditional(exchange.headers)) return undefined;
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
        message: `the answer is ${contentType === undefined ? "without Content-Type" : "not JSON"}, the document declares ${declared.mediaType ?? "application/json"}`,
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
  const text = answer.body.text();
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
  if (declared.errorObject && isJsonObject(value) && value.status !== status) {
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
    found.push(plan.rulesReportOnly ? { ...violation, reportOnly: true } : violation);
  }
  return found;
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
        : cutText(describeSchemaError(errors, ANSWER_WORDING), MESSAGE_MAX),
    excerpt: excerpt(at, name, exchange),
  };
}

function isConditional(headers: IncomingHttpHeaders): boolean {
  return headers["if-none-match"] !== undefined || headers["if-modified-since"] !== undefined;
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
    else if (isJsonObject(node)) node = node[token];
    else return undefined;
  }
  return node;
}

// The backend's answers are held to the interface: the status must be one the document declares
// for the operation, a JSON answer must match its schema, and the interface's own rules (written
// in the document as x-gateway-response-rules) must hold. Per operation the config chooses to
// enforce (the client gets 502 instead), report (the answer passes; the violation is logged,
// counted and listed on the ops port) or off (not even buffered).
//
// Cheap on the hot path: validators were compiled when the description loaded, the status lookup
// is an array index, the body is parsed once with plain JSON.parse, and the slow exact-integer
// parse runs only when a compared number is beyond 2^53. Everything that describes a violation
// (pointers, excerpts, log lines) is built only once a violation is found.
import type { IncomingHttpHeaders } from "node:http";
import type { ErrorObject, JSONSchemaType, ValidateFunction } from "ajv";
import { Ajv } from "ajv";
import { Counter } from "prom-client";
import { declareErrors, type GatewayError } from "../../src/errors.ts";
import {
  escapePointerToken,
  mayHoldUnsafeIntegers,
  parseWithExactIntegers,
  unescapePointerToken,
} from "../../src/json.ts";
import { describeValidationError, type Operation } from "../../src/openapi.ts";
import { definePolicy, type Exchange, type OpsReport, type UpstreamAnswer } from "../../src/policy.ts";
import { JSON_FAMILY_MEDIA_TYPE } from "../../src/untrusted-text.ts";
import { excerpt, headerExcerpt, jsonErrorExcerpt } from "./excerpt.ts";
import { type ContractMode, createDriftLog, type Violation } from "./report.ts";

export type { ContractMode, ContractReport } from "./report.ts";

export interface ResponseContractOptions {
  /** The mode of every operation not named in `operations`. */
  readonly mode: ContractMode;
  /** Per-operationId overrides of the mode. */
  readonly operations: Readonly<Record<string, ContractMode>>;
  /** Distinct violations kept per operation for the drift report (least recently seen dropped first). */
  readonly recentPerOperation: number;
}

// The interface's rules beyond its schemas, as the document states them.
type Rule =
  /** An array answer holds at most as many items as the (defaulted, clamped) parameter says. */
  | { readonly rule: "page-size"; readonly parameter: string; readonly fallback: number | undefined }
  /** When the parameter is given, every item's field equals it. */
  | { readonly rule: "filter"; readonly parameter: string; readonly field: string; readonly token: string }
  /** The answer's field equals the parameter (getPet: id = petId), exactly, int64 included. */
  | { readonly rule: "identity"; readonly parameter: string; readonly field: string; readonly token: string }
  /** Every listed field the request body sent comes back equal. */
  | { readonly rule: "echo"; readonly fields: readonly { readonly name: string; readonly token: string }[] };

interface StatusPlan {
  /** The JSON schema of the declared answer; undefined when the status declares no JSON body. */
  readonly validate: ValidateFunction | undefined;
  /** The answer is the interface's Error object: its status must be the answer's own. */
  readonly errorObject: boolean;
  readonly rules: readonly Rule[];
}

interface OperationPlan {
  readonly operation: Operation;
  readonly mode: "enforce" | "report";
  /** Indexed by status code (100-599): the declared answer, or undefined when not declared. */
  readonly statuses: readonly (StatusPlan | undefined)[];
}

const MODES = ["enforce", "report", "off"] as const;
const RULES_EXTENSION = "x-gateway-response-rules";
const RULES_SCHEMA = {
  type: "array",
  items: {
    type: "object",
    required: ["rule", "status"],
    additionalProperties: false,
    properties: {
      rule: { enum: ["page-size", "filter", "identity", "echo"] },
      status: { type: "string", pattern: "^[1-5][0-9][0-9]$" },
      parameter: { type: "string", minLength: 1 },
      field: { type: "string", minLength: 1 },
      fields: { type: "array", minItems: 1, items: { type: "string", minLength: 1 } },
    },
  },
};

const errors = declareErrors("contract", {
  UPSTREAM_CONTRACT_VIOLATION: {
    status: 502,
    message: "The backend answered outside the interface contract",
  },
});

const optionsSchema: JSONSchemaType<ResponseContractOptions> = {
  type: "object",
  additionalProperties: false,
  required: [],
  properties: {
    // report, not enforce: a gateway put in front of a running backend must not start failing
    // answers clients accept today. Watch /contract/violations, then switch to enforce.
    mode: { type: "string", enum: MODES, default: "report" },
    operations: {
      type: "object",
      propertyNames: { pattern: "^[A-Za-z0-9_.-]+$" },
      additionalProperties: { type: "string", enum: MODES },
      required: [],
      default: {},
    },
    recentPerOperation: { type: "integer", minimum: 1, maximum: 1000, default: 20 },
  },
};

export default definePolicy<ResponseContractOptions, Counter<"operation" | "rule" | "mode">>({
  name: "responseContract",
  errors,
  environment: { CONTRACT_MODE: "mode" },
  optionsSchema,
  metrics: (registry) =>
    new Counter({
      name: "gateway_contract_violations_total",
      help: "Backend answers that broke the interface contract, by operation, rule or schema keyword, and mode",
      labelNames: ["operation", "rule", "mode"] as const,
      registers: [registry],
    }),
  create(options, { api, logger, now }, violations) {
    for (const id of Object.keys(options.operations)) {
      if (api.operation(id) === undefined) {
        throw new Error(
          `policies.responseContract.operations.${id}: ${id} is not an operationId of the description`,
        );
      }
    }
    const validateRules = new Ajv({ strict: true, allErrors: false }).compile(RULES_SCHEMA);
    const modeOf = (operation: Operation): ContractMode => options.operations[operation.id] ?? options.mode;

    const drift = createDriftLog(
      api.operations.map((operation) => [operation.id, modeOf(operation)] as const),
      options.recentPerOperation,
    );

    const record = (plan: OperationPlan, exchange: Exchange, status: number, found: readonly Violation[]) => {
      const operation = plan.operation.id;
      const action = plan.mode === "enforce" ? "rejected" : "passed";
      const at = new Date(now()).toISOString();
      for (const violation of found) {
        violations.labels(operation, violation.rule, plan.mode).inc();
        logger.warn(
          {
            reqId: exchange.requestId,
            operation,
            upstreamStatus: status,
            rule: violation.rule,
            pointer: violation.pointer,
            message: violation.message,
            excerpt: violation.excerpt,
            mode: plan.mode,
            action,
          },
          "contract violation",
        );
        drift.note(operation, violation, {
          requestId: exchange.requestId,
          at,
          upstreamStatus: status,
          pointer: violation.pointer,
          message: violation.message,
          excerpt: violation.excerpt,
          mode: plan.mode,
          action,
        });
      }
      const first = found[0] as Violation;
      exchange.notes.contractViolation = first.rule;
      if (found.length > 1) exchange.notes.contractViolations = found.length;
    };

    return {
      opsReports: { "/contract/violations": drift.report as OpsReport },
      forOperation(operation) {
        const mode = modeOf(operation);
        if (mode === "off") return undefined;
        const plan: OperationPlan = {
          operation,
          mode,
          statuses: planStatuses(operation, compileRules(operation, validateRules)),
        };
        const enforce = mode === "enforce";
        return {
          readsResponseBody: true,
          onResponse(exchange, answer) {
            const found = judge(plan, exchange, answer);
            if (found === undefined) return undefined;
            record(plan, exchange, answer.status, found);
            return enforce ? contractError(found[0] as Violation) : undefined;
          },
        };
      },
    };
  },
});

/** The violations of one answer, or undefined when it keeps the contract. */
function judge(plan: OperationPlan, exchange: Exchange, answer: UpstreamAnswer): Violation[] | undefined {
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
        excerpt: String(answer.headers["content-encoding"] ?? "none"),
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
      // Request validation parsed it already; parse here only when it did not run.
      let sent: unknown = exchange.bodyJson;
      if (sent === undefined) {
        try {
          sent = JSON.parse(requestText);
        } catch {
          return undefined; // request validation refuses such bodies; nothing to compare with
        }
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
        : describeValidationError(errors, "the answer").slice(0, 200),
    excerpt: excerpt(at, name, exchange),
  };
}

function contractError(first: Violation): GatewayError {
  // Rule and place only: the client learns which promise broke, never the backend's data.
  return errors.error(
    "UPSTREAM_CONTRACT_VIOLATION",
    `The backend's answer broke the interface contract (${first.rule} at ${first.pointer || "the answer"})`,
  );
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

// --- Plans: compiled once per operation at start-up ------------------------------------------

function planStatuses(operation: Operation, rules: ReadonlyMap<string, Rule[]>): (StatusPlan | undefined)[] {
  const statuses: (StatusPlan | undefined)[] = [];
  const shared = new Map<unknown, StatusPlan>();
  for (let status = 0; status < 600; status++) {
    const key = String(status);
    const spec =
      status < 100
        ? undefined
        : (operation.responses.get(key) ??
          operation.responses.get(`${key[0]}XX`) ??
          operation.responses.get(`${key[0]}xx`) ??
          operation.responses.get("default"));
    if (spec === undefined) {
      statuses.push(undefined);
      continue;
    }
    // Rules name exact statuses; a range or default entry is one plan for all its statuses.
    const own = rules.get(key);
    let plan = own === undefined ? shared.get(spec) : undefined;
    if (plan === undefined) {
      plan = { validate: spec.validate, errorObject: spec.errorObject, rules: own ?? [] };
      if (own === undefined) shared.set(spec, plan);
    }
    statuses.push(plan);
  }
  return statuses;
}

function compileRules(operation: Operation, validate: ValidateFunction): Map<string, Rule[]> {
  const where = `OpenAPI description: ${operation.method.toLowerCase()} ${operation.path} ${RULES_EXTENSION}`;
  const declared = operation.extensions[RULES_EXTENSION];
  const byStatus = new Map<string, Rule[]>();
  if (declared === undefined) return byStatus;
  if (!validate(declared)) {
    const error = validate.errors?.[0];
    throw new Error(`${where}${error?.instancePath ?? ""} ${error?.message ?? "is not valid"}`);
  }
  const entries = declared as {
    rule: Rule["rule"];
    status: string;
    parameter?: string;
    field?: string;
    fields?: string[];
  }[];
  for (const [index, entry] of entries.entries()) {
    const here = `${where}/${index}`;
    const response = operation.responses.get(entry.status);
    if (response?.validate === undefined) {
      throw new Error(`${here}: status ${entry.status} is not a JSON answer of ${operation.id}`);
    }
    const need = <K extends "parameter" | "field" | "fields">(key: K) => {
      const value = entry[key];
      if (value === undefined) throw new Error(`${here}: ${entry.rule} needs "${key}"`);
      return value as NonNullable<(typeof entry)[K]>;
    };
    const parameterOf = () => {
      const name = need("parameter");
      const spec =
        operation.queryParameters.get(name) ?? operation.pathParameters.find((p) => p.name === name);
      if (!spec) throw new Error(`${here}: ${name} is not a parameter of ${operation.id}`);
      return spec;
    };
    let rule: Rule;
    switch (entry.rule) {
      case "page-size": {
        const spec = parameterOf();
        if (spec.type !== "integer") throw new Error(`${here}: ${spec.name} is not an integer parameter`);
        const fallback = spec.schema.default;
        rule = {
          rule: "page-size",
          parameter: spec.name,
          fallback: typeof fallback === "number" ? fallback : undefined,
        };
        break;
      }
      case "filter":
      case "identity": {
        const field = need("field");
        rule = { rule: entry.rule, parameter: parameterOf().name, field, token: escapePointerToken(field) };
        break;
      }
      case "echo": {
        if (operation.requestBody === undefined)
          throw new Error(`${here}: ${operation.id} takes no request body`);
        rule = {
          rule: "echo",
          fields: need("fields").map((name) => ({ name, token: escapePointerToken(name) })),
        };
        break;
      }
    }
    byStatus.set(entry.status, [...(byStatus.get(entry.status) ?? []), rule]);
  }
  return byStatus;
}

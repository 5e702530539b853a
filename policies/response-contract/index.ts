// The backend's answers are held to the interface: the status must be one the document declares
// for the operation, a JSON answer must match its schema, and the interface's own rules (stated in
// the document as x-gateway-response-rules or in the config, else inferred and only reported)
// must hold. Per operation the config chooses to
// enforce (the client gets 502 instead), report (the answer passes; the violation is logged,
// counted and listed on the ops port; `sample` judges only a random share of answers, the rest
// stream through unjudged and are counted) or off (not even buffered).
//
// Cheap on the hot path: validators were compiled when the description loaded, the status lookup
// is an array index, the body is parsed once with plain JSON.parse, and the slow exact-integer
// parse runs only when a compared number is beyond 2^53. Everything that describes a violation
// (pointers, excerpts, log lines) is built only once a violation is found.
import type { JSONSchemaType } from "ajv";
import { Counter } from "prom-client";
import type { Operation } from "../../src/openapi.ts";
import {
  declareErrors,
  definePolicy,
  type Exchange,
  type GatewayError,
  type PlanContext,
  type UpstreamAnswer,
} from "../../src/policy.ts";
import { confirmingLine, inference } from "./inference.ts";
import {
  describeRule,
  type OperationPlan,
  planOperation,
  RULE_SCHEMA,
  type RuleEntry,
  rulesValidator,
  type StatedRules,
  statedRules,
} from "./plan.ts";
import {
  CONTRACT_VIOLATION_MSG,
  type ContractMode,
  type ContractReport,
  createDriftLog,
  mergeReports,
  renderReport,
  type Violation,
} from "./report.ts";
import { violationsOf } from "./violations.ts";

export type { ContractMode, ContractReport } from "./report.ts";

export interface ResponseContractOptions {
  /** The mode of every operation not named in `operations`. */
  readonly mode: ContractMode;
  /** Per-operationId overrides of the mode. */
  readonly operations: Readonly<Record<string, ContractMode>>;
  /** In report mode, the share of answers held and judged, for every operation not named in `samples`. */
  readonly sample: number;
  /** Per-operationId overrides of the sample. */
  readonly samples: Readonly<Record<string, number>>;
  /** Distinct violations kept per operation for the drift report (least recently seen dropped first). */
  readonly recentPerOperation: number;
  /** Per-operationId rules, for a document that states none (`[]`: none, nor any inferred). */
  readonly rules: Readonly<Record<string, readonly RuleEntry[]>>;
}

const MODES = ["enforce", "report", "off"] as const;
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
  description:
    "The backend's answers held to the interface: enforced (502 instead), reported (logged and counted) or off",
  properties: {
    // report, not enforce: a gateway put in front of a running backend must not start failing
    // answers clients accept today. Watch /contract/violations, then switch to enforce.
    mode: {
      type: "string",
      enum: MODES,
      default: "report",
      description: "`enforce`, `report` or `off` for every operation not overridden in `operations`",
    },
    operations: {
      type: "object",
      propertyNames: { pattern: "^[A-Za-z0-9_.-]+$" },
      additionalProperties: { type: "string", enum: MODES },
      required: [],
      default: {},
      description: "`operationId` → mode; an unknown `operationId` stops start-up",
    },
    sample: {
      type: "number",
      minimum: 0,
      maximum: 1,
      default: 1,
      description:
        "In `report` mode, the share of answers held and judged, chosen at random; the rest stream through unjudged (counted by `gateway_contract_answers_total`). `enforce` judges every answer whatever this says",
    },
    samples: {
      type: "object",
      propertyNames: { pattern: "^[A-Za-z0-9_.-]+$" },
      additionalProperties: { type: "number", minimum: 0, maximum: 1 },
      required: [],
      default: {},
      description: "`operationId` → its `sample`; an unknown `operationId` stops start-up",
    },
    rules: {
      type: "object",
      propertyNames: { pattern: "^[A-Za-z0-9_.-]+$" },
      additionalProperties: { type: "array", items: RULE_SCHEMA },
      required: [],
      default: {},
      description:
        "`operationId` → its rules (`[{rule, status, parameter?, field?, fields?}]`, as `x-gateway-response-rules`; `[]` for none) where the document states none; rules in both places stop start-up. Unstated rules are inferred and only reported",
    },
    recentPerOperation: {
      type: "integer",
      minimum: 1,
      maximum: 1000,
      default: 20,
      description: "Distinct violations kept per operation for the drift report (`/contract/violations`)",
    },
  },
};

interface ContractMetrics {
  readonly violations: Counter<"operation" | "rule" | "mode">;
  readonly answers: Counter<"operation" | "judged">;
}

export default definePolicy<ResponseContractOptions, ContractMetrics>({
  name: "responseContract",
  errors,
  environment: { CONTRACT_MODE: "mode" },
  optionsSchema,
  metrics: (registry) => ({
    violations: new Counter({
      name: "gateway_contract_violations_total",
      help: "Backend answers that broke the interface contract, by operation, rule or schema keyword, and mode",
      labelNames: ["operation", "rule", "mode"] as const,
      registers: [registry],
    }),
    answers: new Counter({
      name: "gateway_contract_answers_total",
      help: 'Backend answers the contract judged (judged="true") or, sampled out in report mode, passed unjudged (judged="false"), by operation: violations over judged answers is the violation rate',
      labelNames: ["operation", "judged"] as const,
      registers: [registry],
    }),
  }),
  opsReports: {
    "/contract/violations": {
      merge: (parts: readonly ContractReport[], options) => mergeReports(parts, options.recentPerOperation),
      render: renderReport,
    },
  },
  plan(options, context) {
    const { rulesOf, modeOf, sampleOf, unread } = contractOf(options, context);
    return {
      warnings:
        unread.length === 0
          ? []
          : [
              {
                warning: "response-rules-not-inferred",
                message: `response rules not inferred where a schema's properties are behind oneOf or anyOf (read through $ref and allOf only): ${unread.map(({ operation, schemas }) => `${operation} (${schemas.join(", ")})`).join("; ")}; state the rules in x-gateway-response-rules or policies.responseContract.rules`,
                operations: unread.map(({ operation }) => operation),
              },
            ],
      operation(operation) {
        const mode = modeOf(operation);
        const rules = rulesOf(operation);
        const inferred = rules.source === "inferred";
        const share = sampleOf(operation);
        const text = [
          mode === "off"
            ? "response: not checked (mode off)"
            : mode === "report" && share < 1
              ? `response: status and schema of a random ${share * 100} % of answers, mode report`
              : `response: status and schema of each declared answer, mode ${mode}`,
        ];
        if (mode !== "off") {
          for (const entry of rules.entries) {
            text.push(
              inferred
                ? `${describeRule(entry)} (inferred, report-only)`
                : `${describeRule(entry)} (stated in the ${rules.source}, ${mode})`,
            );
          }
          if (inferred && rules.entries.length > 0) {
            text.push(`confirm the inferred rules with: ${confirmingLine(operation.id, rules.entries)}`);
          }
        }
        return {
          text,
          data: {
            mode,
            ...(mode === "report" && share < 1 ? { sample: share } : {}),
            rules: rules.entries.map((entry) => ({
              ...entry,
              source: rules.source,
              mode: inferred ? "report" : mode,
            })),
            ...(inferred && rules.entries.length > 0
              ? { confirm: confirmingLine(operation.id, rules.entries) }
              : {}),
          },
        };
      },
    };
  },
  create(options, context, metrics) {
    const { api, logger, now } = context;
    const { modeOf, planOf, sampleOf } = contractOf(options, context);

    const drift = createDriftLog(
      api.operations.map((operation) => [operation.id, modeOf(operation)] as const),
      options.recentPerOperation,
    );

    const record = (plan: OperationPlan, exchange: Exchange, status: number, found: readonly Violation[]) => {
      const operation = plan.operation.id;
      const at = new Date(now()).toISOString();
      for (const raw of found) {
        const mode = raw.reportOnly ? "report" : plan.mode;
        const action = mode === "enforce" ? "rejected" : "passed";
        // The pointer and the message may hold the backend's member names, and with them a key it echoed.
        const violation = {
          ...raw,
          pointer: exchange.redact(raw.pointer),
          message: exchange.redact(raw.message),
        };
        metrics.violations.labels(operation, violation.rule, mode).inc();
        logger.warn(
          {
            reqId: exchange.requestId,
            trace_id: exchange.traceId,
            span_id: exchange.spanId,
            operation,
            upstreamStatus: status,
            rule: violation.rule,
            pointer: violation.pointer,
            message: violation.message,
            excerpt: violation.excerpt,
            mode,
            action,
            // The gateway's clock, as the report's: log-based reports date the violation by it.
            at,
          },
          CONTRACT_VIOLATION_MSG,
        );
        drift.note(operation, violation, {
          requestId: exchange.requestId,
          at,
          upstreamStatus: status,
          pointer: violation.pointer,
          message: violation.message,
          excerpt: violation.excerpt,
          mode,
          action,
        });
      }
      const first = found[0] as Violation;
      exchange.notes.contractViolation = first.rule;
      if (found.length > 1) exchange.notes.contractViolations = found.length;
    };

    return {
      collectReports: { "/contract/violations": drift.collect },
      forOperation(operation) {
        const mode = modeOf(operation);
        if (mode === "off") return undefined;
        const plan = planOf(operation);
        const enforce = mode === "enforce";
        const judged = metrics.answers.labels(operation.id, "true");
        const unjudged = metrics.answers.labels(operation.id, "false");
        const check = (exchange: Exchange, answer: UpstreamAnswer): GatewayError | undefined => {
          judged.inc();
          const found = violationsOf(plan, exchange, answer);
          if (found === undefined) return undefined;
          record(plan, exchange, answer.status, found);
          if (!enforce) return undefined;
          const enforced = found.find((violation) => !violation.reportOnly);
          return enforced ? contractError(enforced) : undefined;
        };
        const share = enforce ? 1 : sampleOf(operation);
        if (share >= 1) return { readsResponseBody: true, onResponse: check };
        // Report mode on a sample: chosen at random per request (never every n-th, which a
        // backend's own periodic behaviour could line up with), before it is forwarded, so that an
        // answer left out is never held. What was left out is remembered until its answer comes.
        const left = new WeakSet<Exchange>();
        return {
          readsResponseBody(exchange) {
            if (Math.random() < share) return true;
            left.add(exchange);
            return false;
          },
          onResponse(exchange, answer) {
            if (!left.has(exchange)) return check(exchange, answer);
            unjudged.inc();
            exchange.notes.contractJudged = false;
            return undefined;
          },
        };
      },
    };
  },
});

/**
 * Each operation's mode and rules, checked (an unknown operationId, rules stated twice or naming
 * what the operation lacks stop start-up): one function for the plan and for create().
 */
function contractOf(options: ResponseContractOptions, context: PlanContext) {
  const { api } = context;
  for (const [field, ids] of [
    ["operations", Object.keys(options.operations)],
    ["rules", Object.keys(options.rules)],
    ["samples", Object.keys(options.samples)],
  ] as const) {
    for (const id of ids) {
      if (api.operation(id) === undefined) {
        throw new Error(
          `policies.responseContract.${field}.${id}: ${id} is not an operationId of the description`,
        );
      }
    }
  }
  const validateRules = rulesValidator();
  const modeOf = (operation: Operation): ContractMode => options.operations[operation.id] ?? options.mode;
  const sampleOf = (operation: Operation): number => options.samples[operation.id] ?? options.sample;
  const rules = new Map<string, StatedRules>();
  const plans = new Map<string, OperationPlan>();
  /** Where an unstated rule could not be inferred: operationId -> the schemas not read. */
  const unread: { readonly operation: string; readonly schemas: readonly string[] }[] = [];
  for (const operation of api.operations) {
    let stated = statedRules(operation, options.rules[operation.id], validateRules);
    if (stated === undefined) {
      const inferred = inference(operation, api);
      stated = { source: "inferred", entries: inferred.rules };
      if (inferred.unread.length > 0 && modeOf(operation) !== "off") {
        unread.push({ operation: operation.id, schemas: inferred.unread });
      }
    }
    // Compiled for the plan too, so that a rule naming what the operation lacks stops the plan as
    // it stops start-up; create() judges with these same compiled plans.
    // (An operation whose mode is off is compiled as reported; nothing judges it.)
    const mode = modeOf(operation);
    plans.set(operation.id, planOperation(operation, mode === "off" ? "report" : mode, stated));
    rules.set(operation.id, stated);
  }
  const rulesOf = (operation: Operation): StatedRules =>
    rules.get(operation.id) ?? { source: "inferred", entries: [] };
  // Every operation of the document has its plan: the loop above went through them all.
  const planOf = (operation: Operation): OperationPlan => plans.get(operation.id) as OperationPlan;
  return { rulesOf, modeOf, sampleOf, planOf, unread };
}

function contractError(first: Violation): GatewayError {
  // Rule and place only: the client learns which promise broke, never the backend's data.
  return errors.error(
    "UPSTREAM_CONTRACT_VIOLATION",
    `The backend's answer broke the interface contract (${first.rule} at ${first.pointer || "the answer"})`,
  );
}

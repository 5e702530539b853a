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
import type { JSONSchemaType } from "ajv";
import { Counter } from "prom-client";
import { declareErrors, type GatewayError } from "../../src/errors.ts";
import type { Operation } from "../../src/openapi.ts";
import { definePolicy, type Exchange } from "../../src/policy.ts";
import { judge } from "./judge.ts";
import { type OperationPlan, planOperation, rulesValidator } from "./plan.ts";
import {
  CONTRACT_VIOLATION_MSG,
  type ContractMode,
  type ContractReport,
  createDriftLog,
  mergeReports,
  renderReport,
  type Violation,
} from "./report.ts";

export type { ContractMode, ContractReport } from "./report.ts";

export interface ResponseContractOptions {
  /** The mode of every operation not named in `operations`. */
  readonly mode: ContractMode;
  /** Per-operationId overrides of the mode. */
  readonly operations: Readonly<Record<string, ContractMode>>;
  /** Distinct violations kept per operation for the drift report (least recently seen dropped first). */
  readonly recentPerOperation: number;
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
    recentPerOperation: {
      type: "integer",
      minimum: 1,
      maximum: 1000,
      default: 20,
      description: "Distinct violations kept per operation for the drift report (`/contract/violations`)",
    },
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
  opsReports: {
    "/contract/violations": {
      merge: (parts: readonly ContractReport[], options) => mergeReports(parts, options.recentPerOperation),
      render: renderReport,
    },
  },
  create(options, { api, logger, now }, violations) {
    for (const id of Object.keys(options.operations)) {
      if (api.operation(id) === undefined) {
        throw new Error(
          `policies.responseContract.operations.${id}: ${id} is not an operationId of the description`,
        );
      }
    }
    const validateRules = rulesValidator();
    const modeOf = (operation: Operation): ContractMode => options.operations[operation.id] ?? options.mode;

    const drift = createDriftLog(
      api.operations.map((operation) => [operation.id, modeOf(operation)] as const),
      options.recentPerOperation,
    );

    const record = (plan: OperationPlan, exchange: Exchange, status: number, found: readonly Violation[]) => {
      const operation = plan.operation.id;
      const action = plan.mode === "enforce" ? "rejected" : "passed";
      const at = new Date(now()).toISOString();
      for (const raw of found) {
        // The pointer and the message may hold the backend's member names, and with them a key it echoed.
        const violation = {
          ...raw,
          pointer: exchange.redact(raw.pointer),
          message: exchange.redact(raw.message),
        };
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
          mode: plan.mode,
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
        const plan = planOperation(operation, mode, validateRules);
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

function contractError(first: Violation): GatewayError {
  // Rule and place only: the client learns which promise broke, never the backend's data.
  return errors.error(
    "UPSTREAM_CONTRACT_VIOLATION",
    `The backend's answer broke the interface contract (${first.rule} at ${first.pointer || "the answer"})`,
  );
}

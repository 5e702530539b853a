// The plan of each operation, compiled once at start-up: per status the declared answer's
// validator, whether it is the interface's Error object, and the interface's own rules, stated in
// the document (x-gateway-response-rules) or the config (policies.responseContract.rules), or
// else inferred (inference.ts), each checked against the operation it names.
import type { ValidateFunction } from "ajv";
import { escapePointerToken } from "../../src/json/pointer.ts";
import { documentedResponseKey } from "../../src/openapi/documented-response.ts";
import type { Operation } from "../../src/openapi.ts";
import { describeSchemaError } from "../../src/schema-error.ts";
import { compileSchema } from "../../src/schema-validator.ts";

/** A rule as the document or the config states it. */
export interface RuleEntry {
  readonly rule: "page-size" | "filter" | "identity" | "echo";
  readonly status: string;
  readonly parameter?: string | undefined;
  readonly field?: string | undefined;
  readonly fields?: readonly string[] | undefined;
}

/** Where an operation's rules come from; inferred ones are checked in report mode only, until stated. */
export type RuleSource = "document" | "config" | "inferred";

/** An operation's rules as stated or inferred, before they are compiled. */
export interface StatedRules {
  readonly source: RuleSource;
  readonly entries: readonly RuleEntry[];
}

// The interface's rules beyond its schemas.
export type Rule =
  /** An array answer holds at most as many items as the (defaulted, clamped) parameter says. */
  | { readonly rule: "page-size"; readonly parameter: string; readonly fallback: number | undefined }
  /** When the parameter is given, every item's field equals it. */
  | { readonly rule: "filter"; readonly parameter: string; readonly field: string; readonly token: string }
  /** The answer's field equals the parameter (getPet: id = petId), exactly, int64 included. */
  | {
      readonly rule: "identity";
      readonly parameter: string;
      readonly field: string;
      readonly token: string;
    }
  /** Every listed field the request body sent comes back equal. */
  | { readonly rule: "echo"; readonly fields: readonly { readonly name: string; readonly token: string }[] };

export interface StatusPlan {
  /** The JSON schema of the declared answer; undefined when the status declares no JSON body. */
  readonly validate: ValidateFunction | undefined;
  /** The JSON media type the document declares for it, named when an answer is not JSON. */
  readonly mediaType: string | undefined;
  /** The answer is the interface's Error object: its status must be the answer's own. */
  readonly errorObject: boolean;
  readonly rules: readonly Rule[];
}

export interface OperationPlan {
  readonly operation: Operation;
  readonly mode: "enforce" | "report";
  /** The rules were inferred, stated nowhere: what they find is reported, never enforced. */
  readonly rulesReportOnly: boolean;
  /** Indexed by status code (100-599): the declared answer, or undefined when not declared. */
  readonly statuses: readonly (StatusPlan | undefined)[];
}

const RULES_EXTENSION = "x-gateway-response-rules";
/** One rule, as the document's extension and the config write it. */
export const RULE_SCHEMA = {
  type: "object",
  required: ["rule", "status"],
  additionalProperties: false,
  properties: {
    rule: { type: "string", enum: ["page-size", "filter", "identity", "echo"] },
    status: { type: "string", pattern: "^[1-5][0-9][0-9]$" },
    parameter: { type: "string", minLength: 1, nullable: true },
    field: { type: "string", minLength: 1, nullable: true },
    fields: { type: "array", minItems: 1, items: { type: "string", minLength: 1 }, nullable: true },
  },
} as const;
const RULES_SCHEMA = { type: "array", items: RULE_SCHEMA };

/** Checks a document's rules: one validator per policy instance, shared by its operations. */
export function rulesValidator(): ValidateFunction {
  return compileSchema(RULES_SCHEMA);
}

export function planOperation(
  operation: Operation,
  mode: OperationPlan["mode"],
  rules: StatedRules,
): OperationPlan {
  return {
    operation,
    mode,
    rulesReportOnly: rules.source === "inferred",
    statuses: planStatuses(operation, compileRules(operation, rules)),
  };
}

/**
 * The rules the document or the config states for an operation (`[]` states none), checked; a
 * list in both places is refused. undefined when neither states any.
 */
export function statedRules(
  operation: Operation,
  configured: readonly RuleEntry[] | undefined,
  validate: ValidateFunction,
): StatedRules | undefined {
  const declared = operation.extensions[RULES_EXTENSION];
  if (declared !== undefined && configured !== undefined) {
    throw new Error(
      `policies.responseContract.rules.${operation.id}: ${operation.id} states its rules in the document (${RULES_EXTENSION}) too; state them in one place`,
    );
  }
  if (configured !== undefined) return { source: "config", entries: configured };
  if (declared === undefined) return undefined;
  const where = `OpenAPI description: ${operation.method.toLowerCase()} ${operation.path} ${RULES_EXTENSION}`;
  if (!validate(declared)) {
    throw new Error(describeSchemaError(validate.errors, { field: (pointer) => `${where}${pointer}` }));
  }
  return { source: "document", entries: declared as RuleEntry[] };
}

/** The rules in one line each: "page-size: at most limit items in 200". */
export function describeRule(entry: RuleEntry): string {
  switch (entry.rule) {
    case "page-size":
      return `page-size: a ${entry.status} page holds at most ${entry.parameter} items`;
    case "filter":
      return `filter: with ${entry.parameter}, every item of a ${entry.status} answer has ${entry.field} equal to it`;
    case "identity":
      return `identity: a ${entry.status} answer's ${entry.field} equals ${entry.parameter}`;
    case "echo":
      return `echo: a ${entry.status} answer repeats the request's ${entry.fields?.join(", ")}`;
  }
}

function planStatuses(operation: Operation, rules: ReadonlyMap<string, Rule[]>): (StatusPlan | undefined)[] {
  const statuses: (StatusPlan | undefined)[] = [];
  const shared = new Map<unknown, StatusPlan>();
  for (let status = 0; status < 600; status++) {
    const key = String(status);
    const written = status < 100 ? undefined : documentedResponseKey(operation.responses, status);
    const spec = written === undefined ? undefined : operation.responses.get(written);
    if (spec === undefined) {
      statuses.push(undefined);
      continue;
    }
    // Rules name exact statuses; a range or default entry is one plan for all its statuses.
    const own = rules.get(key);
    let plan = own === undefined ? shared.get(spec) : undefined;
    if (plan === undefined) {
      plan = {
        validate: spec.validate,
        mediaType: spec.mediaType,
        errorObject: spec.errorObject,
        rules: own ?? [],
      };
      if (own === undefined) shared.set(spec, plan);
    }
    statuses.push(plan);
  }
  return statuses;
}

function compileRules(operation: Operation, stated: StatedRules): Map<string, Rule[]> {
  const where =
    stated.source === "config"
      ? `policies.responseContract.rules.${operation.id}`
      : `OpenAPI description: ${operation.method.toLowerCase()} ${operation.path} ${RULES_EXTENSION}`;
  const byStatus = new Map<string, Rule[]>();
  for (const [index, entry] of stated.entries.entries()) {
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
        rule = { rule: "page-size", parameter: spec.name, fallback: spec.numericDefault };
        break;
      }
      case "filter":
      case "identity": {
        const field = need("field");
        rule = {
          rule: entry.rule,
          parameter: parameterOf().name,
          field,
          token: escapePointerToken(field),
        };
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

// The plan of each operation, compiled once at start-up: per status the declared answer's
// validator, whether it is the interface's Error object, and the interface's own rules
// (x-gateway-response-rules), checked against the operation they name.
import type { ValidateFunction } from "ajv";
import { escapePointerToken } from "../../src/json/pointer.ts";
import type { Operation } from "../../src/openapi.ts";
import { describeSchemaError } from "../../src/schema-error.ts";
import { compileSchema } from "../../src/schema-validator.ts";

// The interface's rules beyond its schemas, as the document states them.
export type Rule =
  /** An array answer holds at most as many items as the (defaulted, clamped) parameter says. */
  | { readonly rule: "page-size"; readonly parameter: string; readonly fallback: number | undefined }
  /** When the parameter is given, every item's field equals it. */
  | { readonly rule: "filter"; readonly parameter: string; readonly field: string; readonly token: string }
  /** The answer's field equals the parameter (getPet: id = petId), exactly, int64 included. */
  | { readonly rule: "identity"; readonly parameter: string; readonly field: string; readonly token: string }
  /** Every listed field the request body sent comes back equal. */
  | { readonly rule: "echo"; readonly fields: readonly { readonly name: string; readonly token: string }[] };

export interface StatusPlan {
  /** The JSON schema of the declared answer; undefined when the status declares no JSON body. */
  readonly validate: ValidateFunction | undefined;
  /** The answer is the interface's Error object: its status must be the answer's own. */
  readonly errorObject: boolean;
  readonly rules: readonly Rule[];
}

export interface OperationPlan {
  readonly operation: Operation;
  readonly mode: "enforce" | "report";
  /** Indexed by status code (100-599): the declared answer, or undefined when not declared. */
  readonly statuses: readonly (StatusPlan | undefined)[];
}

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

/** Checks a document's rules: one validator per policy instance, shared by its operations. */
export function rulesValidator(): ValidateFunction {
  return compileSchema(RULES_SCHEMA);
}

export function planOperation(
  operation: Operation,
  mode: OperationPlan["mode"],
  validateRules: ValidateFunction,
): OperationPlan {
  return { operation, mode, statuses: planStatuses(operation, compileRules(operation, validateRules)) };
}

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
    throw new Error(describeSchemaError(validate.errors, { field: (pointer) => `${where}${pointer}` }));
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

// What the OpenAPI document says of each operation's lifecycle: `deprecated: true`, its dates and
// successor (the extension, or the gateway config) and the stability marker, read once and
// checked. The deprecation report command and the plan build the same facts with the same function.
import type { ApiDescription, Operation } from "../../src/openapi.ts";
import type { PlanWarning } from "../../src/policy.ts";
import { describeSchemaError, type ErrorWording } from "../../src/schema-error.ts";
import { compileSchema } from "../../src/schema-validator.ts";
import { ApiDescriptionError, ConfigError } from "../../src/startup-errors.ts";
import type { DeprecatedOperationFacts } from "./deprecation-report.ts";

/** The extension that dates a deprecation and names its successor. */
export const DEPRECATION_EXTENSION = "x-gateway-deprecation";
/** The extension that marks an operation experimental or beta. */
export const STABILITY_EXTENSION = "x-stability";
export type Stability = "experimental" | "beta";

export interface Deprecation {
  readonly operation: Operation;
  /** When the deprecation took effect; without it no Deprecation header (RFC 9745 has no undated form). */
  readonly since: number | undefined;
  readonly sunset: number | undefined;
  readonly successor: { readonly operation: Operation; readonly note: string | undefined } | undefined;
  /** Where each given field came from: the document's extension or the gateway config. */
  readonly sources: Readonly<Partial<Record<DeprecationField, string>>>;
}

export type DeprecationField = "since" | "sunset" | "successor";
const FIELDS: readonly DeprecationField[] = ["since", "sunset", "successor"];

/** The dates and successor of one deprecated operation, as the document's extension or the config gives them. */
export interface DeprecationDates {
  readonly since?: string | undefined;
  readonly sunset?: string | undefined;
  readonly successor?:
    | { readonly method: string; readonly path: string; readonly note?: string | undefined }
    | undefined;
}

export interface LifecycleFacts {
  readonly deprecations: ReadonlyMap<string, Deprecation>;
  readonly stability: ReadonlyMap<string, Stability>;
}

const STABILITIES: readonly string[] = ["experimental", "beta"] satisfies Stability[];

const EXTENSION_SCHEMA = {
  type: "object",
  additionalProperties: false,
  properties: {
    since: { type: "string", format: "date-time" },
    sunset: { type: "string", format: "date-time" },
    successor: {
      type: "object",
      additionalProperties: false,
      required: ["method", "path"],
      properties: {
        method: { type: "string", pattern: "^[A-Za-z]+$" },
        path: { type: "string", pattern: "^/" },
        note: { type: "string" },
      },
    },
  },
};

const extensionField = (pointer: string) => `${DEPRECATION_EXTENSION}${pointer.replaceAll("/", ".")}`;
const EXTENSION_WORDING: ErrorWording = {
  field: extensionField,
  unknownProperty: (pointer, property) => `${extensionField(pointer)} has an unknown field "${property}"`,
};
/** Where the config dates deprecations the document does not. */
export const CONFIG_OPERATIONS = "policies.lifecycle.operations";

/**
 * The lifecycle facts of a description and the config's dates for it, checked. Every operation
 * marked `deprecated: true` is a deprecation, dated or not; its since, sunset and successor come
 * from x-gateway-deprecation or from `policies.lifecycle.operations.<operationId>` (a field in
 * both is refused: which one holds would be a guess). since must not be after sunset, and the
 * successor must be an operation of the same document. Throws ApiDescriptionError naming the
 * operation for the document, ConfigError naming the field for the config.
 */
export function readLifecycle(
  api: ApiDescription,
  configured: Readonly<Record<string, DeprecationDates>> = {},
): LifecycleFacts {
  const validate = compileSchema(EXTENSION_SCHEMA);
  const deprecations = new Map<string, Deprecation>();
  const stability = new Map<string, Stability>();
  for (const id of Object.keys(configured)) {
    const operation = api.operation(id);
    if (operation === undefined) {
      throw new ConfigError(
        `invalid config: ${CONFIG_OPERATIONS}.${id}: ${id} is not an operationId of the description`,
      );
    }
    if (!operation.deprecated) {
      throw new ConfigError(
        `invalid config: ${CONFIG_OPERATIONS}.${id}: ${id} is not deprecated: true in the document (the document says what is deprecated; the config may only date it)`,
      );
    }
  }
  for (const operation of api.operations) {
    const where = `operation ${operation.id} (${operation.method} ${operation.path})`;
    const fail = (message: string): never => {
      throw new ApiDescriptionError(`OpenAPI description: ${where}: ${message}`);
    };
    const marker = operation.extensions[STABILITY_EXTENSION];
    if (marker !== undefined) {
      if (typeof marker !== "string" || !STABILITIES.includes(marker)) {
        fail(
          `${STABILITY_EXTENSION} must be one of ${STABILITIES.join(", ")}, not ${JSON.stringify(marker)}`,
        );
      }
      stability.set(operation.id, marker as Stability);
    }
    const extension = operation.extensions[DEPRECATION_EXTENSION];
    if (extension !== undefined) {
      if (!operation.deprecated)
        fail(`${DEPRECATION_EXTENSION} is given but the operation is not deprecated: true`);
      if (!validate(extension)) fail(describeSchemaError(validate.errors, EXTENSION_WORDING));
    }
    if (!operation.deprecated) continue;
    const fromDocument = (extension ?? {}) as DeprecationDates;
    const fromConfig = configured[operation.id] ?? {};
    const sources: Partial<Record<DeprecationField, string>> = {};
    for (const field of FIELDS) {
      const inDocument = fromDocument[field] !== undefined;
      const inConfig = fromConfig[field] !== undefined;
      if (inDocument && inConfig) {
        throw new ConfigError(
          `invalid config: ${CONFIG_OPERATIONS}.${operation.id}.${field}: ${operation.id}'s ${field} is given by ${DEPRECATION_EXTENSION} in the document too; give it in one place`,
        );
      }
      if (inDocument) sources[field] = `${DEPRECATION_EXTENSION}.${field}`;
      if (inConfig) sources[field] = `${CONFIG_OPERATIONS}.${operation.id}.${field}`;
    }
    const fields: DeprecationDates = {
      since: fromDocument.since ?? fromConfig.since,
      sunset: fromDocument.sunset ?? fromConfig.sunset,
      successor: fromDocument.successor ?? fromConfig.successor,
    };
    const since = fields.since === undefined ? undefined : Date.parse(fields.since);
    const sunset = fields.sunset === undefined ? undefined : Date.parse(fields.sunset);
    const problem = (field: DeprecationField, message: string): never => {
      const source = sources[field] as string;
      if (source.startsWith(CONFIG_OPERATIONS)) throw new ConfigError(`invalid config: ${source}${message}`);
      return fail(`${source}${message}`);
    };
    if (since !== undefined && sunset !== undefined && since > sunset) {
      problem("since", ` (${fields.since}) is later than its sunset (${fields.sunset})`);
    }
    let successor: Deprecation["successor"];
    if (fields.successor) {
      const { path } = fields.successor;
      const method = fields.successor.method.toUpperCase();
      const target = api.operations.find((o) => o.method === method && o.path === path);
      if (!target) problem("successor", ` ${method} ${path} is not an operation of the document`);
      if (target === operation) problem("successor", " is the operation itself");
      successor = { operation: target as Operation, note: fields.successor.note };
    }
    deprecations.set(operation.id, { operation, since, sunset, successor, sources });
  }
  return { deprecations, stability };
}

/**
 * The config line that dates each deprecation lacking a date: start-up warns with it, once.
 * Without since no Deprecation header is sent, without sunset no Sunset header (nor a 410).
 */
export function undatedWarning(deprecations: ReadonlyMap<string, Deprecation>): PlanWarning | undefined {
  const undated = [...deprecations.values()].filter((d) => d.since === undefined || d.sunset === undefined);
  if (undated.length === 0) return undefined;
  const lacks = (d: Deprecation) =>
    [d.since === undefined ? "since" : undefined, d.sunset === undefined ? "sunset" : undefined].filter(
      (field): field is string => field !== undefined,
    );
  return {
    warning: "deprecation-undated",
    message: `deprecated operations without a date: ${undated
      .map(
        (d) =>
          `${d.operation.id} has no ${lacks(d)
            .map((field) =>
              field === "since" ? "since (no Deprecation header)" : "sunset (no Sunset header)",
            )
            .join(" and no ")}`,
      )
      .join("; ")}; date them in the gateway config`,
    operations: undated.map((d) => d.operation.id),
    fixes: undated.map((d) => datingLine(d.operation.id, lacks(d))),
  };
}

/** `"policies": {"lifecycle": {"operations": {"getPet": {"since": "<RFC 3339 date-time>"}}}}` */
function datingLine(operation: string, fields: readonly string[]): string {
  const dates = Object.fromEntries(fields.map((field) => [field, "<RFC 3339 date-time>"]));
  return `"policies": ${JSON.stringify({ lifecycle: { operations: { [operation]: dates } } })}`;
}

/** How the report describes a deprecation (the log command builds the same from the document). */
export function deprecationFacts(deprecation: Deprecation, basePath: string): DeprecatedOperationFacts {
  const { operation, successor } = deprecation;
  return {
    operation: operation.id,
    method: operation.method,
    path: `${basePath}${operation.path}`,
    since: deprecation.since,
    sunset: deprecation.sunset,
    successor: successor && `${successor.operation.method} ${basePath}${successor.operation.path}`,
  };
}

// What the OpenAPI document says of each operation's lifecycle: the deprecation extension (since,
// sunset, successor) and the stability marker, read once and checked. The deprecation report
// command builds the same facts from the document.
import type { ApiDescription, Operation } from "../../src/openapi.ts";
import { describeSchemaError, type ErrorWording } from "../../src/schema-error.ts";
import { compileSchema } from "../../src/schema-validator.ts";
import { ApiDescriptionError } from "../../src/startup-errors.ts";
import type { DeprecatedOperationFacts } from "./deprecation-report.ts";

/** The extension that dates a deprecation and names its successor. */
export const DEPRECATION_EXTENSION = "x-gateway-deprecation";
/** The extension that marks an operation experimental or beta. */
export const STABILITY_EXTENSION = "x-stability";
export type Stability = "experimental" | "beta";

export interface Deprecation {
  readonly operation: Operation;
  readonly since: number;
  readonly sunset: number | undefined;
  readonly successor: { readonly operation: Operation; readonly note: string | undefined } | undefined;
}

export interface LifecycleFacts {
  readonly deprecations: ReadonlyMap<string, Deprecation>;
  readonly stability: ReadonlyMap<string, Stability>;
}

const STABILITIES: readonly string[] = ["experimental", "beta"] satisfies Stability[];

const EXTENSION_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["since"],
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

/**
 * The lifecycle facts of a description, checked: a deprecated operation needs the date it took
 * effect (RFC 9745 has no "deprecated, date unknown"), since must not be after sunset, and the
 * successor must be an operation of the same document. Throws ApiDescriptionError naming the operation.
 */
export function readLifecycle(api: ApiDescription): LifecycleFacts {
  const validate = compileSchema(EXTENSION_SCHEMA);
  const deprecations = new Map<string, Deprecation>();
  const stability = new Map<string, Stability>();
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
    if (extension === undefined) {
      if (operation.deprecated) {
        fail(
          `deprecated: true needs ${DEPRECATION_EXTENSION} with at least "since" (the date the deprecation took effect, sent as the Deprecation header)`,
        );
      }
      continue;
    }
    if (!operation.deprecated)
      fail(`${DEPRECATION_EXTENSION} is given but the operation is not deprecated: true`);
    if (!validate(extension)) {
      fail(describeSchemaError(validate.errors, EXTENSION_WORDING));
    }
    const fields = extension as {
      since: string;
      sunset?: string;
      successor?: { method: string; path: string; note?: string };
    };
    const since = Date.parse(fields.since);
    const sunset = fields.sunset === undefined ? undefined : Date.parse(fields.sunset);
    if (sunset !== undefined && since > sunset) {
      fail(`${DEPRECATION_EXTENSION}.since (${fields.since}) is later than its sunset (${fields.sunset})`);
    }
    let successor: Deprecation["successor"];
    if (fields.successor) {
      const method = fields.successor.method.toUpperCase();
      const target = api.operations.find((o) => o.method === method && o.path === fields.successor?.path);
      if (!target) {
        fail(
          `${DEPRECATION_EXTENSION}.successor ${method} ${fields.successor.path} is not an operation of the document`,
        );
      }
      if (target === operation) fail(`${DEPRECATION_EXTENSION}.successor is the operation itself`);
      successor = { operation: target as Operation, note: fields.successor.note };
    }
    deprecations.set(operation.id, { operation, since, sunset, successor });
  }
  return { deprecations, stability };
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

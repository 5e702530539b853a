// Page-size parameters are defaulted and clamped before the backend sees them, using the default,
// minimum and maximum the OpenAPI document gives the parameter. A value out of range is clamped,
// never rejected; a value that is not an integer is rejected. Which parameter is a page size is
// the document's to say (x-gateway-page-size, or the name rule: src/openapi/page-size.ts); the
// config may name others instead.
import type { JSONSchemaType } from "ajv";
import { Counter } from "prom-client";
import { labelChildren } from "../../src/metrics.ts";
import type { ApiDescription, ParameterSpec } from "../../src/openapi.ts";
import { parseIntegerLiteral } from "../../src/parameters.ts";
import { declareErrors, definePolicy } from "../../src/policy.ts";

export interface LimitOptions {
  /**
   * "operationId.parameter" of every query parameter to default and clamp; absent, the page size
   * of each operation that has one.
   */
  readonly parameters?: readonly string[] | undefined;
}

interface Bounds {
  readonly spec: ParameterSpec;
  readonly minimum: number | undefined;
  readonly maximum: number | undefined;
  readonly fallback: string | undefined;
  readonly appliedHeader: string;
  /** The access log's note names, built once: `${name}Adjusted`, `${name}Requested`. */
  readonly adjustedNote: string;
  readonly requestedNote: string;
  /** The counter of each kind of adjustment, its label child looked up once. */
  readonly counter: (adjustment: Adjustment) => { inc(): void };
}

type Adjustment = "defaulted" | "clamped_to_minimum" | "clamped_to_maximum";

// The same code and words as request validation's: a limit that is no integer is an invalid
// parameter to the client, whichever policy noticed (the catalogue refuses them if they differ).
const errors = declareErrors("validation", {
  INVALID_PARAMETER: { status: 400, message: "A parameter is not valid" },
});

const optionsSchema: JSONSchemaType<LimitOptions> = {
  type: "object",
  additionalProperties: false,
  // Every option has a default: none is required of the config.
  required: [],
  description:
    "Page-size parameters defaulted and clamped to the default, minimum and maximum the OpenAPI document gives them",
  properties: {
    parameters: {
      type: "array",
      items: { type: "string", pattern: "^[A-Za-z0-9_]+\\.[A-Za-z0-9_-]+$" },
      nullable: true,
      description:
        "`operationId.parameter` of each integer query parameter to default and clamp, instead of the page size the document gives each operation (`x-gateway-page-size`, or the name rule); absent: those page sizes",
    },
  },
};

export default definePolicy<LimitOptions, Counter<"operation" | "parameter" | "adjustment">>({
  name: "limit",
  errors,
  optionsSchema,
  metrics: (registry) =>
    new Counter({
      name: "gateway_limit_adjustments_total",
      help: "Query parameters the gateway defaulted or clamped before the backend saw them (not rejections)",
      labelNames: ["operation", "parameter", "adjustment"] as const,
      registers: [registry],
    }),
  plan(options, { api }) {
    const clamped = clampedParameters(options, api);
    return {
      operation(operation) {
        const mine = clamped.filter((entry) => entry.operationId === operation.id);
        if (mine.length === 0) return undefined;
        return {
          setsQuery: mine.map(({ spec }) => spec.name),
          text: mine.map(
            ({ spec, minimum, maximum, fallback }) =>
              `${spec.name} clamped to ${minimum ?? "-∞"}..${maximum ?? "∞"}${fallback === undefined ? "" : `; ${fallback} when absent`} (${appliedHeaderOf(spec.name)})`,
          ),
          data: mine.map(({ spec, minimum, maximum, fallback }) => ({
            parameter: spec.name,
            minimum: minimum ?? null,
            maximum: maximum ?? null,
            default: fallback ?? null,
          })),
        };
      },
    };
  },
  create(options, { api }, adjustments) {
    const byOperation = new Map<string, Bounds[]>();
    for (const { operationId, name, spec, minimum, maximum, fallback } of clampedParameters(options, api)) {
      const counter = labelChildren((adjustment: Adjustment) =>
        adjustments.labels(operationId, name, adjustment),
      );
      const bounds: Bounds = {
        spec,
        minimum,
        maximum,
        fallback: fallback?.toString(),
        appliedHeader: appliedHeaderOf(name),
        adjustedNote: `${name}Adjusted`,
        requestedNote: `${name}Requested`,
        counter,
      };
      byOperation.set(operationId, [...(byOperation.get(operationId) ?? []), bounds]);
    }

    return {
      responseHeaders: [...byOperation.values()].flat().map((bounds) => bounds.appliedHeader),
      forOperation(operation) {
        const all = byOperation.get(operation.id);
        if (!all) return undefined;
        return {
          onRequest(exchange) {
            for (const bounds of all) {
              const { spec, minimum, maximum, fallback } = bounds;
              const given = exchange.query.get(spec.name);
              let applied: string | undefined;
              let adjustment: Adjustment | undefined;
              if (given === undefined) {
                if (fallback === undefined) continue;
                applied = fallback;
                adjustment = "defaulted";
              } else {
                const value = parseIntegerLiteral(given);
                if (value === undefined) {
                  return errors.error("INVALID_PARAMETER", `${spec.name} must be an integer`);
                }
                if (minimum !== undefined && value < minimum) {
                  applied = String(minimum);
                  adjustment = "clamped_to_minimum";
                } else if (maximum !== undefined && value > maximum) {
                  applied = String(maximum);
                  adjustment = "clamped_to_maximum";
                } else applied = given === String(value) ? given : String(value);
              }
              if (applied !== given) {
                exchange.setQueryParameter(spec.name, applied);
              }
              exchange.responseHeaders[bounds.appliedHeader] = applied;
              if (adjustment) {
                bounds.counter(adjustment).inc();
                exchange.notes[bounds.adjustedNote] = adjustment;
                if (given !== undefined) exchange.notes[bounds.requestedNote] = given.slice(0, 32);
              }
            }
            return undefined;
          },
        };
      },
    };
  },
});

/**
 * Each parameter the options name, checked against the description, or else each operation's page
 * size; with its bounds from the document.
 */
function clampedParameters(options: LimitOptions, api: ApiDescription) {
  const named =
    options.parameters?.map((entry) => {
      const [operationId, name] = entry.split(".") as [string, string];
      const spec = api.operation(operationId)?.queryParameters.get(name);
      if (!spec)
        throw new Error(`policies.limit.parameters: ${entry} is not a query parameter of the description`);
      if (spec.type !== "integer")
        throw new Error(`policies.limit.parameters: ${entry} is not an integer parameter`);
      return { operationId, spec };
    }) ??
    // The document's page sizes are integer query parameters: src/openapi/page-size.ts holds them to it.
    api.operations.flatMap(({ id, pageSize, queryParameters }) => {
      const spec = pageSize?.parameter === undefined ? undefined : queryParameters.get(pageSize.parameter);
      return spec === undefined ? [] : [{ operationId: id, spec }];
    });
  return named.map(({ operationId, spec }) => ({
    operationId,
    name: spec.name,
    spec,
    minimum: spec.minimum,
    maximum: spec.maximum,
    fallback: spec.numericDefault,
  }));
}

/** The answer header that says what value the backend got (x-limit-applied). */
function appliedHeaderOf(parameter: string): string {
  return `x-${parameter.toLowerCase()}-applied`;
}

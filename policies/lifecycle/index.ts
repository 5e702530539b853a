// The API lifecycle, read from the OpenAPI document: a deprecated operation announces itself on
// every answer (RFC 9745 Deprecation, RFC 8594 Sunset, RFC 8288 Link to its successor), every
// authenticated call to it is logged and counted per consumer, and past its sunset or inside a
// brownout window it answers 410. Operations marked experimental or beta say so in a header and
// are counted; production may refuse experimental ones. Marking another operation in the document
// is all it takes: nothing here names an operation.
//
// One policy (its options are policies.lifecycle) of two parts that judge different operations
// and meet only where an operation is both deprecated and unstable: deprecation.ts and stability.ts.
import type { JSONSchemaType } from "ajv";
import { Counter, Gauge } from "prom-client";
import { flatLineLogger } from "../../src/logger.ts";
import { definePolicy } from "../../src/policy.ts";
import { sunsetChanges } from "./changes.ts";
import { consumerCounters } from "./consumers.ts";
import { BROWNOUT_HEADER, brownoutWindows, DEPRECATION_HEADERS, deprecationPhases } from "./deprecation.ts";
import { CallerTally, type DeprecationReport, mergeReports } from "./deprecation-report.ts";
import { prepareReport, renderReport } from "./deprecation-report-formats.ts";
import { errors } from "./errors.ts";
import { type DeprecationDates, deprecationFacts, readLifecycle } from "./facts.ts";
import { planLifecycle } from "./plan.ts";
import { STABILITY_HEADER, stabilityPhases } from "./stability.ts";

export {
  DEPRECATION_EXTENSION,
  type Deprecation,
  type DeprecationDates,
  deprecationFacts,
  type LifecycleFacts,
  readLifecycle,
  STABILITY_EXTENSION,
  type Stability,
} from "./facts.ts";
export { STABILITY_HEADER } from "./stability.ts";

export interface LifecycleOptions {
  /** The dates and successor of deprecated operations, by operationId, where the document has none. */
  readonly operations: Readonly<Record<string, DeprecationDates>>;
  /** A page explaining the deprecation: sent as Link rel="deprecation" on deprecated operations. */
  readonly documentationUrl: string | undefined;
  /** Past the sunset: answer 410 (refuse) or keep serving with the headers (serve). */
  readonly afterSunset: "refuse" | "serve";
  /** Windows before the sunset in which the operation already answers 410. */
  readonly brownouts: readonly { readonly operation: string; readonly start: string; readonly end: string }[];
  /** In the production environment, operations marked experimental answer 403 (refuse) or are served. */
  readonly experimentalInProduction: "refuse" | "serve";
  /** Bound on the (operation, consumer) rows of the /deprecations report kept in memory. */
  readonly maxTrackedCallers: number;
  /** Distinct consumer label values per process; later consumers are counted as "_other". */
  readonly maxConsumerLabels: number;
}

const optionsSchema: JSONSchemaType<LifecycleOptions> = {
  type: "object",
  additionalProperties: false,
  required: [],
  description:
    "The API lifecycle the OpenAPI document marks: deprecation, sunset and brownouts, experimental and beta operations",
  properties: {
    operations: {
      type: "object",
      propertyNames: { pattern: "^[A-Za-z0-9_.-]+$" },
      required: [],
      default: {},
      description:
        "`operationId` → `{since, sunset, successor: {method, path, note}}` for operations the document marks `deprecated: true` without `x-gateway-deprecation` (or without that field in it): a field given in both places stops start-up",
      additionalProperties: {
        type: "object",
        additionalProperties: false,
        required: [],
        properties: {
          since: { type: "string", format: "date-time", nullable: true },
          sunset: { type: "string", format: "date-time", nullable: true },
          successor: {
            type: "object",
            nullable: true,
            additionalProperties: false,
            required: ["method", "path"],
            properties: {
              method: { type: "string", pattern: "^[A-Za-z]+$" },
              path: { type: "string", pattern: "^/" },
              note: { type: "string", nullable: true },
            },
          },
        },
      },
    },
    // No spaces or angle brackets: the URL goes between < > in a Link header.
    documentationUrl: {
      type: "string",
      nullable: true,
      pattern: "^https?://[^\\s<>]+$",
      description: 'Sent as `Link: <URL>; rel="deprecation"` on every deprecated operation',
    },
    afterSunset: {
      type: "string",
      enum: ["refuse", "serve"],
      default: "refuse",
      description: "`refuse`: 410 from the sunset on; `serve`: keep serving with the headers",
    },
    brownouts: {
      type: "array",
      default: [],
      description: "`{operation, start, end}` windows (RFC 3339) answered with 410 before the sunset",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["operation", "start", "end"],
        properties: {
          operation: { type: "string", minLength: 1 },
          start: { type: "string", format: "date-time" },
          end: { type: "string", format: "date-time" },
        },
      },
    },
    experimentalInProduction: {
      type: "string",
      enum: ["refuse", "serve"],
      default: "refuse",
      description: "`refuse`: 403 for experimental operations in `production`; `serve`: serve them",
    },
    maxTrackedCallers: {
      type: "integer",
      minimum: 1,
      maximum: 1_000_000,
      default: 10_000,
      description: "(operation, consumer) rows the `/deprecations` report keeps in memory (LRU)",
    },
    maxConsumerLabels: {
      type: "integer",
      minimum: 0,
      maximum: 100_000,
      default: 1000,
      description: "Distinct `consumer` label values per process; later consumers count as `_other`",
    },
  },
};

interface LifecycleMetrics {
  readonly deprecatedCalls: Counter<"operation" | "consumer">;
  readonly unstableCalls: Counter<"operation" | "stability" | "consumer">;
  readonly sunsets: Gauge<"operation">;
}

export default definePolicy<LifecycleOptions, LifecycleMetrics>({
  name: "lifecycle",
  errors,
  optionsSchema,
  metrics: (registry) => ({
    deprecatedCalls: new Counter({
      name: "gateway_deprecated_calls_total",
      help: "Authenticated calls to deprecated operations, by operation and consumer",
      labelNames: ["operation", "consumer"] as const,
      registers: [registry],
    }),
    unstableCalls: new Counter({
      name: "gateway_unstable_operation_calls_total",
      help: "Authenticated calls to operations marked experimental or beta, by operation, stability and consumer",
      labelNames: ["operation", "stability", "consumer"] as const,
      registers: [registry],
    }),
    // For alerts on calls close to the sunset: time() - this is what is left.
    sunsets: new Gauge({
      name: "gateway_deprecation_sunset_timestamp_seconds",
      help: "The sunset of each deprecated operation that has one, in Unix seconds",
      labelNames: ["operation"] as const,
      // The same in every worker: summed, the date would move by a factor of the workers.
      aggregator: "first",
      registers: [registry],
    }),
  }),
  opsReports: { "/deprecations": { merge: mergeReports, prepare: prepareReport, render: renderReport } },
  plan: planLifecycle,
  // A sunset may be the config's: the document's text alone cannot say it moved.
  compareDocuments: (options, running, candidate) => sunsetChanges(options.operations, running, candidate),
  create(options, { api, logger, environment, now }, metrics) {
    const { deprecations, stability } = readLifecycle(api, options.operations);
    const { basePath } = api;
    const windows = brownoutWindows(options, deprecations);
    const tally = new CallerTally(options.maxTrackedCallers);
    const facts = [...deprecations.values()].map((deprecation) => deprecationFacts(deprecation, basePath));
    // One cap of distinct consumers over both counters.
    const countBy = consumerCounters(options.maxConsumerLabels);
    const deprecationSetting = {
      options,
      basePath,
      windows,
      tally,
      calls: metrics.deprecatedCalls,
      countBy,
      // The deprecated-call line is flat (strings only, the User-Agent already cleaned of key
      // material): the full logger's wildcard redaction would walk its every field on every call.
      logger: flatLineLogger(logger),
      now,
    };
    const stabilitySetting = {
      basePath,
      refuseExperimental: environment === "production" && options.experimentalInProduction === "refuse",
      calls: metrics.unstableCalls,
      countBy,
    };

    const started = now();
    // The ops report says since when it counts: in-memory figures start again at every deploy.
    const countingSince = new Date(started).toISOString();
    for (const deprecation of deprecations.values()) {
      const { sunset } = deprecation;
      if (sunset !== undefined) metrics.sunsets.labels(deprecation.operation.id).set(sunset / 1000);
      logger.info(
        {
          operation: deprecation.operation.id,
          since: deprecation.since === undefined ? undefined : new Date(deprecation.since).toISOString(),
          sunset: sunset === undefined ? undefined : new Date(sunset).toISOString(),
          afterSunset: options.afterSunset,
          brownouts: windows.get(deprecation.operation.id)?.length ?? 0,
        },
        sunset !== undefined && started >= sunset
          ? "deprecated operation past its sunset"
          : "deprecated operation",
      );
    }

    return {
      responseHeaders: [
        ...(deprecations.size > 0 ? DEPRECATION_HEADERS : []),
        // A page must be able to read when a brownout ends (CORS exposes what is declared).
        ...(windows.size > 0 ? [BROWNOUT_HEADER] : []),
        ...(stability.size > 0 ? [STABILITY_HEADER] : []),
      ],
      forOperation(operation) {
        const found = deprecations.get(operation.id);
        const marker = stability.get(operation.id);
        const deprecation = found && deprecationPhases(found, deprecationSetting);
        const unstable = marker && stabilityPhases(operation, marker, stabilitySetting);
        if (!deprecation || !unstable) return deprecation ?? unstable;
        // Deprecated and unstable: the deprecation judges first (a removed operation answers 410
        // whatever its marker), and the answer carries both parts' headers.
        return {
          onRequest: (exchange) => deprecation.onRequest(exchange) ?? unstable.onRequest(exchange),
          onReply(exchange, status, headers) {
            deprecation.onReply(exchange, status, headers);
            unstable.onReply(exchange, status, headers);
          },
        };
      },
      collectReports: {
        // In slices: a tally of many callers must not hold the loop (the ops port is asked in a loop).
        "/deprecations": async (): Promise<DeprecationReport> => {
          const { generatedAt, operations } = await tally.snapshot(facts, now());
          return { generatedAt, countingSince, operations };
        },
      },
    };
  },
});

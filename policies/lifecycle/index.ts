// The API lifecycle, read from the OpenAPI document: a deprecated operation announces itself on
// every answer (RFC 9745 Deprecation, RFC 8594 Sunset, RFC 8288 Link to its successor), every
// authenticated call to it is logged and counted per consumer, and past its sunset or inside a
// brownout window it answers 410. Operations marked experimental or beta say so in a header and
// are counted; production may refuse experimental ones. Marking another operation in the document
// is all it takes: nothing here names an operation.
import type { OutgoingHttpHeaders } from "node:http";
import { Ajv, type JSONSchemaType } from "ajv";
import addFormats from "ajv-formats";
import { Counter } from "prom-client";
import { ConfigError } from "../../src/config.ts";
import { declareErrors, type GatewayError } from "../../src/errors.ts";
import { labelChildren } from "../../src/metrics.ts";
import { type ApiDescription, ApiDescriptionError, type Operation } from "../../src/openapi.ts";
import { definePolicy, type Exchange, type OpsReport } from "../../src/policy.ts";
import { redactText } from "../response-contract/excerpt.ts";
import {
  CallerTally,
  DEPRECATED_CALL_MSG,
  type DeprecatedOperationFacts,
  type DeprecationReport,
  mergeReports,
  renderReport,
  USER_AGENT_MAX,
} from "./deprecation-report.ts";

/** The extension that dates a deprecation and names its successor. */
export const DEPRECATION_EXTENSION = "x-gateway-deprecation";
/** The extension that marks an operation experimental or beta. */
export const STABILITY_EXTENSION = "x-stability";
/** The response header that carries the marker to the client. */
export const STABILITY_HEADER = "x-api-stability";
export type Stability = "experimental" | "beta";

export interface LifecycleOptions {
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
// Consumer names start with a letter or digit (the key file's pattern): these cannot collide.
const ANONYMOUS = "_anonymous";
const OTHER_CONSUMERS = "_other";

const errors = declareErrors("lifecycle", {
  OPERATION_SUNSET: { status: 410, message: "The operation has been removed" },
  OPERATION_BROWNOUT: {
    status: 410,
    message: "The operation is deprecated and temporarily unavailable (brownout)",
  },
  OPERATION_NOT_AVAILABLE: {
    status: 403,
    message: "The operation is experimental and not available in this environment",
  },
});

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

/**
 * The lifecycle facts of a description, checked: a deprecated operation needs the date it took
 * effect (RFC 9745 has no "deprecated, date unknown"), since must not be after sunset, and the
 * successor must be an operation of the same document. Throws ApiDescriptionError naming the operation.
 */
export function readLifecycle(api: ApiDescription): LifecycleFacts {
  const ajv = new Ajv({ strict: true, allErrors: false });
  addFormats.default(ajv, ["date-time"]);
  const validate = ajv.compile(EXTENSION_SCHEMA);
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
      const error = validate.errors?.[0];
      const field = `${DEPRECATION_EXTENSION}${error?.instancePath.replaceAll("/", ".") ?? ""}`;
      const params = (error?.params ?? {}) as Record<string, unknown>;
      fail(
        error?.keyword === "additionalProperties"
          ? `${field} has an unknown field "${String(params.additionalProperty)}"`
          : `${field} ${error?.message ?? "is not valid"}`,
      );
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

const optionsSchema: JSONSchemaType<LifecycleOptions> = {
  type: "object",
  additionalProperties: false,
  required: [],
  properties: {
    // No spaces or angle brackets: the URL goes between < > in a Link header.
    documentationUrl: { type: "string", nullable: true, pattern: "^https?://[^\\s<>]+$" },
    afterSunset: { type: "string", enum: ["refuse", "serve"], default: "refuse" },
    brownouts: {
      type: "array",
      default: [],
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
    experimentalInProduction: { type: "string", enum: ["refuse", "serve"], default: "refuse" },
    maxTrackedCallers: { type: "integer", minimum: 1, maximum: 1_000_000, default: 10_000 },
    maxConsumerLabels: { type: "integer", minimum: 0, maximum: 100_000, default: 1000 },
  },
};

interface LifecycleMetrics {
  readonly deprecatedCalls: Counter<"operation" | "consumer">;
  readonly unstableCalls: Counter<"operation" | "stability" | "consumer">;
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
  }),
  create(options, { api, logger, environment, now }, metrics) {
    const { deprecations, stability } = readLifecycle(api);
    const { basePath } = api;
    const windows = brownoutWindows(options, deprecations);
    const refuseExperimental = environment === "production" && options.experimentalInProduction === "refuse";
    const tally = new CallerTally(options.maxTrackedCallers);
    const facts = [...deprecations.values()].map((deprecation) => deprecationFacts(deprecation, basePath));

    // Metric label values stay bounded even with a huge key file: past the cap a consumer is
    // still logged and reported by name, and counted in the metric as "_other".
    const labelled = new Set<string>();
    const consumerLabel = (consumer: string): string => {
      if (labelled.has(consumer)) return consumer;
      if (labelled.size >= options.maxConsumerLabels) return OTHER_CONSUMERS;
      labelled.add(consumer);
      return consumer;
    };
    // The deprecated and the unstable call counters alike: one label child per consumer label.
    const consumerCounter = (child: (label: string) => { inc(): void }) => {
      const counters = labelChildren(child);
      return (consumer: string): void => counters(consumerLabel(consumer)).inc();
    };

    const started = now();
    for (const deprecation of deprecations.values()) {
      const { sunset } = deprecation;
      logger.info(
        {
          operation: deprecation.operation.id,
          since: new Date(deprecation.since).toISOString(),
          sunset: sunset === undefined ? undefined : new Date(sunset).toISOString(),
          afterSunset: options.afterSunset,
          brownouts: windows.get(deprecation.operation.id)?.length ?? 0,
        },
        sunset !== undefined && started >= sunset
          ? "deprecated operation past its sunset"
          : "deprecated operation",
      );
    }

    const deprecationPhases = (deprecation: Deprecation) => {
      const { operation, sunset, successor } = deprecation;
      const id = operation.id;
      const publicName = `${operation.method} ${basePath}${operation.path}`;
      const replacement = successor
        ? `use ${successor.operation.method} ${basePath}${successor.operation.path}${successor.note ? ` (${successor.note})` : ""} instead`
        : "it has no successor";
      const sunsetDate = sunset === undefined ? undefined : httpDate(sunset);
      // Computed once: the values come from the document and never change while it is loaded.
      const headerValues: Record<string, string> = {
        deprecation: `@${Math.floor(deprecation.since / 1000)}`,
      };
      if (sunsetDate) headerValues.sunset = sunsetDate;
      const links: string[] = [];
      // A templated path is no URI a client could follow; the 410 message still names it.
      if (successor && !successor.operation.path.includes("{")) {
        links.push(`<${basePath}${successor.operation.path}>; rel="successor-version"`);
      }
      if (options.documentationUrl) links.push(`<${options.documentationUrl}>; rel="deprecation"`);
      const link = links.length > 0 ? links.join(", ") : undefined;
      const gone =
        sunset !== undefined && options.afterSunset === "refuse"
          ? errors.error("OPERATION_SUNSET", `${publicName} was removed on ${sunsetDate}; ${replacement}`)
          : undefined;
      const sunsetIso = sunset === undefined ? undefined : new Date(sunset).toISOString();
      // Each window's answer is fixed by the config: built once, not on every call it refuses.
      const brownouts = (windows.get(id) ?? []).map(({ start, end }) => {
        const until = httpDate(end);
        const brownout = errors.error(
          "OPERATION_BROWNOUT",
          `${publicName} is deprecated${sunsetDate ? ` and will be removed on ${sunsetDate}` : ""}; it is unavailable in a scheduled brownout until ${until}; ${replacement}`,
          { "retry-after": until },
        );
        return { start, end, brownout };
      });
      const countCall = consumerCounter((label) => metrics.deprecatedCalls.labels(id, label));

      return {
        onRequest(exchange: Exchange): GatewayError | undefined {
          const at = now();
          let outcome: "served" | "sunset" | "brownout" = "served";
          let reply: GatewayError | undefined;
          if (gone && at >= (sunset as number)) {
            outcome = "sunset";
            reply = gone;
          } else {
            for (const window of brownouts) {
              if (at < window.start || at >= window.end) continue;
              outcome = "brownout";
              reply = window.brownout;
              break;
            }
          }
          const consumer = exchange.consumer ?? ANONYMOUS;
          // A client that put a key in its User-Agent must not find it in the log or the report.
          const userAgent = headerText(exchange.req.headers["user-agent"], exchange);
          tally.record(id, consumer, at, userAgent);
          countCall(consumer);
          // The fleet-wide record of who still calls: scripts/deprecation-report.ts reads these lines.
          logger.info(
            {
              operation: id,
              consumer,
              calledAt: new Date(at).toISOString(),
              userAgent,
              clientAddress: exchange.clientAddress,
              reqId: exchange.requestId,
              outcome,
              sunset: sunsetIso,
            },
            DEPRECATED_CALL_MSG,
          );
          return reply;
        },
        // Every answer, 401s and errors included: a client learns of the deprecation whatever it did wrong.
        onReply(_exchange: Exchange, _status: number, headers: OutgoingHttpHeaders): void {
          for (const name in headerValues) headers[name] = headerValues[name];
          if (link) headers.link = appendLink(headers.link, link);
        },
      };
    };

    const stabilityPhases = (operation: Operation, marker: Stability) => {
      const refusal =
        marker === "experimental" && refuseExperimental
          ? errors.error(
              "OPERATION_NOT_AVAILABLE",
              `${operation.method} ${basePath}${operation.path} is experimental and not available in production`,
            )
          : undefined;
      const countCall = consumerCounter((label) => metrics.unstableCalls.labels(operation.id, marker, label));
      return {
        onRequest(exchange: Exchange): GatewayError | undefined {
          countCall(exchange.consumer ?? ANONYMOUS);
          exchange.notes.stability = marker;
          return refusal;
        },
        onReply(_exchange: Exchange, _status: number, headers: OutgoingHttpHeaders): void {
          headers[STABILITY_HEADER] = marker;
        },
      };
    };

    const report: OpsReport<DeprecationReport> = {
      collect: () => tally.report(facts, now()),
      merge: mergeReports,
      render: renderReport,
    };

    return {
      responseHeaders: [
        ...(deprecations.size > 0 ? ["deprecation", "sunset", "link"] : []),
        ...(stability.size > 0 ? [STABILITY_HEADER] : []),
      ],
      forOperation(operation) {
        const deprecation = deprecations.get(operation.id);
        const marker = stability.get(operation.id);
        const first = deprecation && deprecationPhases(deprecation);
        const second = marker && stabilityPhases(operation, marker);
        if (!first || !second) return first ?? second;
        return {
          onRequest: (exchange) => first.onRequest(exchange) ?? second.onRequest(exchange),
          onReply(exchange, status, headers) {
            first.onReply(exchange, status, headers);
            second.onReply(exchange, status, headers);
          },
        };
      },
      opsReports: { "/deprecations": report as OpsReport },
    };
  },
});

interface Window {
  readonly start: number;
  readonly end: number;
}

function brownoutWindows(
  options: LifecycleOptions,
  deprecations: ReadonlyMap<string, Deprecation>,
): Map<string, Window[]> {
  const windows = new Map<string, Window[]>();
  for (const [index, brownout] of options.brownouts.entries()) {
    const where = `policies.lifecycle.brownouts[${index}]`;
    const deprecation = deprecations.get(brownout.operation);
    if (!deprecation) {
      throw new ConfigError(
        `invalid config: ${where}.operation: ${brownout.operation} is not a deprecated operation of the document`,
      );
    }
    const start = Date.parse(brownout.start);
    const end = Date.parse(brownout.end);
    if (!(end > start)) throw new ConfigError(`invalid config: ${where}: end must be after start`);
    if (deprecation.sunset !== undefined && start >= deprecation.sunset) {
      throw new ConfigError(
        `invalid config: ${where}: starts at or after the sunset of ${brownout.operation} (${new Date(deprecation.sunset).toISOString()})`,
      );
    }
    windows.set(brownout.operation, [...(windows.get(brownout.operation) ?? []), { start, end }]);
  }
  return windows;
}

/** IMF-fixdate (RFC 9110 §5.6.7), e.g. Thu, 05 Dec 2030 00:00:00 GMT. */
function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

function appendLink(existing: OutgoingHttpHeaders[string], link: string): string {
  if (existing === undefined) return link;
  const prior = Array.isArray(existing) ? existing.join(", ") : String(existing);
  return prior === "" ? link : `${prior}, ${link}`;
}

function headerText(value: string | string[] | undefined, exchange: Exchange): string {
  // Redacted before it is cut, so that a cut through a key cannot leave a piece of it.
  const text = redactText(Array.isArray(value) ? value.join(", ") : (value ?? ""), exchange);
  return text.length > USER_AGENT_MAX ? text.slice(0, USER_AGENT_MAX) : text;
}

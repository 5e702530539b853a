// A deprecated operation: the Deprecation, Sunset and Link headers on every answer, every call
// logged (the fleet-wide record of who still calls) and counted per consumer, and 410 past the
// sunset or inside a brownout window.
import type { OutgoingHttpHeaders } from "node:http";
import type { Logger } from "pino";
import type { Counter } from "prom-client";
import { isoTimestamp } from "../../src/logger.ts";
import type { Exchange, GatewayError } from "../../src/policy.ts";
import { ConfigError } from "../../src/startup-errors.ts";
import { ANONYMOUS, type ConsumerCounter } from "./consumers.ts";
import { type CallerTally, DEPRECATED_CALL_MSG, daysFrom, USER_AGENT_MAX } from "./deprecation-report.ts";
import { errors } from "./errors.ts";
import type { Deprecation } from "./facts.ts";
import type { LifecycleOptions } from "./index.ts";

/** The response headers a deprecated operation adds. */
export const DEPRECATION_HEADERS = ["deprecation", "sunset", "link"] as const;
/** The header a brownout's 410 adds: when the window ends. */
export const BROWNOUT_HEADER = "retry-after";

export interface DeprecationSetting {
  readonly options: LifecycleOptions;
  readonly basePath: string;
  readonly windows: ReadonlyMap<string, readonly Window[]>;
  readonly tally: CallerTally;
  readonly calls: Counter<"operation" | "consumer">;
  readonly countBy: ConsumerCounter;
  readonly logger: Logger;
  now(): number;
}

export function deprecationPhases(deprecation: Deprecation, setting: DeprecationSetting) {
  const { options, basePath, windows, tally, logger, now } = setting;
  const { operation, sunset, successor } = deprecation;
  const id = operation.id;
  const publicName = `${operation.method} ${basePath}${operation.path}`;
  const replacement = successor
    ? `use ${successor.operation.method} ${basePath}${successor.operation.path}${successor.note ? ` (${successor.note})` : ""} instead`
    : "it has no successor";
  const sunsetDate = sunset === undefined ? undefined : httpDate(sunset);
  // Computed once: the values come from the document and never change while it is loaded.
  // RFC 9745's value is a date: an undated deprecation sends no Deprecation header (start-up warned).
  const headerValues: Record<string, string> = {};
  if (deprecation.since !== undefined) headerValues.deprecation = `@${Math.floor(deprecation.since / 1000)}`;
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
      { [BROWNOUT_HEADER]: until },
    );
    return { start, end, brownout };
  });
  const countCall = setting.countBy((label) => setting.calls.labels(id, label));

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
      // For the access line and the request's span: how close the caller is to the sunset.
      if (sunset !== undefined) exchange.notes.daysToSunset = daysFrom(at, sunset);
      const consumer = exchange.consumer ?? ANONYMOUS;
      // A client that put a key in its User-Agent must not find it in the log or the report.
      const userAgent = headerText(exchange.headers["user-agent"], exchange);
      tally.record(id, consumer, at, userAgent);
      countCall(consumer);
      // The fleet-wide record of who still calls: scripts/deprecation-report.ts reads these lines.
      logger.info(
        {
          operation: id,
          consumer,
          calledAt: isoTimestamp(at),
          userAgent,
          clientAddress: exchange.clientAddress,
          reqId: exchange.requestId,
          trace_id: exchange.traceId,
          span_id: exchange.spanId,
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
}

export interface Window {
  readonly start: number;
  readonly end: number;
}

export function brownoutWindows(
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
  const text = exchange.redact(Array.isArray(value) ? value.join(", ") : (value ?? ""));
  return text.length > USER_AGENT_MAX ? text.slice(0, USER_AGENT_MAX) : text;
}

// Tracing is configured by OpenTelemetry's standard variables only, read once at start-up. It is
// off unless an OTLP endpoint is given: the spec's default (localhost:4318) would have every
// gateway spray spans at a port nobody listens on. The SDK itself reads none of these for us:
// the gateway maps each to the SDK's options, and refuses what it cannot honour (gRPC) by name.
import { ConfigError } from "../startup-errors.ts";
import { withoutTrailingSlashes } from "../trailing-slashes.ts";

export type OtlpProtocol = "http/protobuf" | "http/json";

export type SamplerSetting =
  | { readonly kind: "always_on" | "always_off" }
  | { readonly kind: "traceidratio"; readonly ratio: number }
  | { readonly kind: "parentbased"; readonly root: SamplerSetting };

/**
 * The batch span processor's shape: OTEL_BSP_* where set, else the gateway's defaults below. The
 * SDK itself reads none of these variables.
 */
export interface BatchSettings {
  /** OTEL_BSP_MAX_QUEUE_SIZE: spans waiting for export; past it a span is dropped (and counted). */
  readonly maxQueueSize: number;
  /** OTEL_BSP_MAX_EXPORT_BATCH_SIZE: spans per export, at most maxQueueSize. */
  readonly maxExportBatchSize: number;
  /** OTEL_BSP_SCHEDULE_DELAY: milliseconds a span may wait for its batch to fill. */
  readonly scheduledDelayMillis: number;
  /** OTEL_BSP_EXPORT_TIMEOUT: milliseconds one export may take before its spans count as lost. */
  readonly exportTimeoutMillis: number;
}

export interface TracingSettings {
  /** The traces URL, …/v1/traces. */
  readonly url: string;
  readonly protocol: OtlpProtocol;
  /** OTEL_EXPORTER_OTLP_HEADERS: collector credentials, never logged. */
  readonly headers: Readonly<Record<string, string>>;
  readonly serviceName: string;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: SamplerSetting;
  readonly batch: BatchSettings;
}

export const DEFAULT_SERVICE_NAME = "petstore-gateway";
const TRACES_PATH = "/v1/traces";
/** The spec's queue. */
const MAX_QUEUE_SIZE = 2048;
/**
 * Half the spec's 512: a span waits for its batch, and at the rates where tracing's cost shows
 * (7,000 requests a second at 1.0) a batch of 512 filled in about 37 ms, longer than the young
 * generation lasted (a scavenge every 25 ms or so): many of its spans outlived two scavenges and were
 * promoted, for every full collection to mark again (bench/results/2026-11-26-tracing-cost.md).
 * 256 keeps them young; 128 promoted no less, for twice the exports.
 */
const MAX_EXPORT_BATCH_SIZE = 256;
/** The spec says 5 s; a second keeps what a quiet gateway holds, and the trace's delay, short. */
const SCHEDULED_DELAY_MS = 1000;
/** The spec says 30 s; 10 s is the OTLP exporter's own timeout, and a batch past it is counted lost. */
const EXPORT_TIMEOUT_MS = 10_000;

type Env = Readonly<Record<string, string | undefined>>;

/** The settings, or undefined when tracing is off; a ConfigError names a variable it cannot honour. */
export function tracingSettings(env: Env): TracingSettings | undefined {
  if (value(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") return undefined;
  const exporter = value(env, "OTEL_TRACES_EXPORTER")?.toLowerCase();
  if (exporter === "none") return undefined;
  if (exporter !== undefined && exporter !== "otlp") {
    throw new ConfigError(`OTEL_TRACES_EXPORTER: "${exporter}" is not supported; use "otlp" or "none"`);
  }
  const url = tracesUrl(env);
  if (url === undefined) return undefined;
  return {
    url,
    protocol: protocolOf(env),
    headers: {
      ...keyValues(env, "OTEL_EXPORTER_OTLP_HEADERS"),
      ...keyValues(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
    },
    serviceName: value(env, "OTEL_SERVICE_NAME") ?? DEFAULT_SERVICE_NAME,
    resourceAttributes: keyValues(env, "OTEL_RESOURCE_ATTRIBUTES"),
    sampler: samplerOf(env),
    batch: batchOf(env),
  };
}

function tracesUrl(env: Env): string | undefined {
  const signal = value(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const base = value(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  // The signal's own endpoint is used as it is; the base one gets the signal's path (the spec).
  const url = signal ?? (base === undefined ? undefined : `${withoutTrailingSlashes(base)}${TRACES_PATH}`);
  if (url === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(
      `${signal ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT"} is not a URL`,
    );
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new ConfigError("the OTLP endpoint must be an http: or https: URL");
  }
  return url;
}

function protocolOf(env: Env): OtlpProtocol {
  const protocol =
    value(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? value(env, "OTEL_EXPORTER_OTLP_PROTOCOL");
  if (protocol === undefined || protocol === "http/protobuf") return "http/protobuf";
  if (protocol === "http/json") return "http/json";
  if (protocol === "grpc") {
    throw new ConfigError(
      'OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported by the gateway; use "http/protobuf" (the default) or "http/json" against the collector\'s OTLP/HTTP port (4318)',
    );
  }
  throw new ConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL: "${protocol}" is not one of http/protobuf, http/json`);
}

function samplerOf(env: Env): SamplerSetting {
  const name = value(env, "OTEL_TRACES_SAMPLER")?.toLowerCase() ?? "parentbased_always_on";
  const arg = value(env, "OTEL_TRACES_SAMPLER_ARG");
  const ratio = () => {
    if (arg === undefined) return 1;
    const parsed = Number(arg);
    if (!Number.isFinite(parsed) || parsed < 0 || parsed > 1) {
      throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG: "${arg}" is not a ratio between 0 and 1`);
    }
    return parsed;
  };
  switch (name) {
    case "always_on":
    case "always_off":
      return { kind: name };
    case "traceidratio":
      return { kind: "traceidratio", ratio: ratio() };
    case "parentbased_always_on":
      return { kind: "parentbased", root: { kind: "always_on" } };
    case "parentbased_always_off":
      return { kind: "parentbased", root: { kind: "always_off" } };
    case "parentbased_traceidratio":
      return { kind: "parentbased", root: { kind: "traceidratio", ratio: ratio() } };
    default:
      throw new ConfigError(
        `OTEL_TRACES_SAMPLER: "${name}" is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio`,
      );
  }
}

function batchOf(env: Env): BatchSettings {
  const maxQueueSize = positive(env, "OTEL_BSP_MAX_QUEUE_SIZE");
  const maxExportBatchSize = positive(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE");
  if (maxQueueSize !== undefined && maxExportBatchSize !== undefined && maxExportBatchSize > maxQueueSize) {
    throw new ConfigError("OTEL_BSP_MAX_EXPORT_BATCH_SIZE must not exceed OTEL_BSP_MAX_QUEUE_SIZE");
  }
  const queue = maxQueueSize ?? MAX_QUEUE_SIZE;
  return {
    maxQueueSize: queue,
    maxExportBatchSize: maxExportBatchSize ?? Math.min(MAX_EXPORT_BATCH_SIZE, queue),
    scheduledDelayMillis: positive(env, "OTEL_BSP_SCHEDULE_DELAY") ?? SCHEDULED_DELAY_MS,
    exportTimeoutMillis: positive(env, "OTEL_BSP_EXPORT_TIMEOUT") ?? EXPORT_TIMEOUT_MS,
  };
}

/** A whole number above 0: the OTEL_BSP_* variables are counts and milliseconds. */
function positive(env: Env, name: string): number | undefined {
  const text = value(env, name);
  if (text === undefined) return undefined;
  const parsed = Number(text);
  if (!Number.isSafeInteger(parsed) || parsed <= 0) {
    throw new ConfigError(`${name}: "${text}" is not a whole number above 0`);
  }
  return parsed;
}

// "key1=value1,key2=value2", each part URL-encoded (the spec's W3C Baggage-like form).
function keyValues(env: Env, name: string): Record<string, string> {
  const text = value(env, name);
  const pairs: Record<string, string> = {};
  if (text === undefined) return pairs;
  for (const part of text.split(",")) {
    const equals = part.indexOf("=");
    if (equals <= 0) throw new ConfigError(`${name}: every entry must be key=value`);
    try {
      pairs[decodeURIComponent(part.slice(0, equals).trim())] = decodeURIComponent(
        part.slice(equals + 1).trim(),
      );
    } catch {
      // The value may be a credential: the message names the variable only.
      throw new ConfigError(`${name}: an entry is not validly URL-encoded`);
    }
  }
  return pairs;
}

function value(env: Env, name: string): string | undefined {
  const text = env[name]?.trim();
  return text === undefined || text === "" ? undefined : text;
}

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

export interface TracingSettings {
  /** The traces URL, …/v1/traces. */
  readonly url: string;
  readonly protocol: OtlpProtocol;
  /** OTEL_EXPORTER_OTLP_HEADERS: collector credentials, never logged. */
  readonly headers: Readonly<Record<string, string>>;
  readonly serviceName: string;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: SamplerSetting;
}

export const DEFAULT_SERVICE_NAME = "petstore-gateway";
const TRACES_PATH = "/v1/traces";

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

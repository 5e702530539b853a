// Gateway configuration: the deployment's choices only (what the interface is lives in the
// OpenAPI document). A JSON file plus environment variables, validated once with ajv, with
// defaults filled in, unknown keys refused, and the result frozen.
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { escapePointerToken, parseJsonText } from "./json.ts";
import type { AnyPolicyDefinition } from "./policy.ts";
import { describeSchemaError } from "./schema-error.ts";
import { createSchemaValidator } from "./schema-validator.ts";
import { ConfigError } from "./startup-errors.ts";
import { isIpRange } from "./trusted-proxies.ts";

// Tests import it from here, where it lived before start-up errors had one module.
export { ConfigError };

/** The directory of package.json: the same from the sources (src/) and from the build (dist/src/). */
export const PROJECT_ROOT = projectRoot(import.meta.dirname);
export const DEFAULT_CONFIG_FILE = resolve(PROJECT_ROOT, "config/gateway.json");
export const DEFAULT_OPENAPI_FILE = resolve(PROJECT_ROOT, "config/openapi.json");

export interface GatewayConfig {
  readonly port: number;
  readonly host: string;
  readonly opsPort: number;
  readonly opsHost: string;
  /** Explicitly chosen environment; undefined means none was chosen. */
  readonly environment: "production" | "staging" | undefined;
  readonly openapi: string;
  readonly workers: number | "auto";
  readonly upstream: {
    readonly url: string | undefined;
    readonly environments: { readonly production?: string; readonly staging?: string };
    readonly connectTimeoutMs: number;
    readonly timeoutMs: number;
    readonly maxSockets: number;
    readonly maxFreeSockets: number;
    readonly idleSocketTimeoutMs: number;
    /** Without traffic, how often a TCP connect tells whether the backend is reachable (0: never). */
    readonly probeIntervalMs: number;
  };
  readonly server: {
    readonly keepAliveTimeoutMs: number;
    readonly headersTimeoutMs: number;
    readonly requestTimeoutMs: number;
    readonly maxRequestBodyBytes: number;
    readonly maxResponseBodyBytes: number;
    readonly maxBufferedBytes: number;
    readonly maxQueuedAnswerBytes: number;
    readonly sendTimeoutMs: number;
    readonly sendDeadlineMs: number;
    readonly maxHeaderBytes: number;
    readonly maxConnections: number;
    readonly maxOpsConnections: number;
    readonly trustedProxies: readonly string[];
    readonly shutdownDrainMs: number;
    readonly shutdownTimeoutMs: number;
  };
  readonly log: { readonly level: string };
  readonly policies: Readonly<Record<string, unknown>>;
}

const PORT = { type: "integer", minimum: 0, maximum: 65535 };
const MILLISECONDS = { type: "integer", minimum: 1, maximum: 86_400_000 };
const URL_STRING = { type: "string", pattern: "^https?://[^\\s]+$" };

function configSchema(policies: readonly AnyPolicyDefinition[]) {
  const section = (properties: Record<string, unknown>) => ({
    type: "object",
    additionalProperties: false,
    default: {},
    properties,
  });
  return {
    type: "object",
    additionalProperties: false,
    properties: {
      $schema: { type: "string" },
      port: { ...PORT, default: 8080 },
      host: { type: "string", default: "0.0.0.0" },
      opsPort: { ...PORT, default: 9090 },
      opsHost: { type: "string", default: "0.0.0.0" },
      environment: { enum: ["production", "staging"] },
      openapi: { type: "string", minLength: 1, default: DEFAULT_OPENAPI_FILE },
      workers: { anyOf: [{ type: "integer", minimum: 1, maximum: 256 }, { const: "auto" }], default: 1 },
      upstream: section({
        url: URL_STRING,
        environments: section({ production: URL_STRING, staging: URL_STRING }),
        connectTimeoutMs: { ...MILLISECONDS, default: 2000 },
        timeoutMs: { ...MILLISECONDS, default: 10_000 },
        maxSockets: { type: "integer", minimum: 1, maximum: 65_536, default: 256 },
        maxFreeSockets: { type: "integer", minimum: 0, maximum: 65_536, default: 256 },
        // Below Node's own 5 s server keep-alive, so the gateway drops an idle socket first.
        idleSocketTimeoutMs: { ...MILLISECONDS, default: 4000 },
        probeIntervalMs: {
          anyOf: [{ const: 0 }, { type: "integer", minimum: 100, maximum: 86_400_000 }],
          default: 10_000,
        },
      }),
      server: section({
        // Above the 60 s idle timeout of common load balancers, so they close first.
        keepAliveTimeoutMs: { ...MILLISECONDS, default: 75_000 },
        headersTimeoutMs: { ...MILLISECONDS, default: 10_000 },
        requestTimeoutMs: { ...MILLISECONDS, default: 30_000 },
        maxRequestBodyBytes: { type: "integer", minimum: 1, default: 65_536 },
        maxResponseBodyBytes: { type: "integer", minimum: 1, default: 1_048_576 },
        maxBufferedBytes: {
          type: "integer",
          minimum: 1,
          default: 67_108_864,
          description:
            "Bytes of answers held to be judged whole, per process (so WORKERS times this in all): past it, a request whose answer would be held gets 503 GATEWAY_BUSY",
        },
        maxQueuedAnswerBytes: {
          type: "integer",
          minimum: 1,
          default: 1_048_576,
          description:
            "Bytes of a connection's held answers not yet handed to the kernel past which its next pipelined request waits",
        },
        maxHeaderBytes: { type: "integer", minimum: 1024, maximum: 1_048_576, default: 16_384 },
        maxConnections: { type: "integer", minimum: 1, default: 10_000 },
        maxOpsConnections: {
          type: "integer",
          minimum: 1,
          default: 64,
          description:
            "Connections to the ops port: a kubelet's probes, a few scrapers and the image's health check need a handful",
        },
        // Addresses and ranges, matched as addresses (src/trusted-proxies.ts); a host name would
        // never match a peer, so the X-Forwarded-For of a real proxy would be dropped.
        trustedProxies: {
          type: "array",
          items: {
            anyOf: [
              { type: "string", format: "ipv4", description: "an IPv4 address" },
              { type: "string", format: "ipv6", description: "an IPv6 address" },
              { type: "string", format: "ip-range", description: "a range such as 10.0.0.0/8 or fd00::/8" },
            ],
          },
          default: [],
        },
        sendTimeoutMs: {
          ...MILLISECONDS,
          default: 60_000,
          description: "A connection whose answer has not moved towards the client for this long is cut",
        },
        sendDeadlineMs: {
          ...MILLISECONDS,
          default: 300_000,
          description:
            "The longest one answer may take to send, whatever its pace; then the connection is cut",
        },
        shutdownDrainMs: { type: "integer", minimum: 0, maximum: 600_000, default: 3000 },
        shutdownTimeoutMs: { ...MILLISECONDS, default: 20_000 },
      }),
      log: section({
        level: { enum: ["fatal", "error", "warn", "info", "debug", "trace", "silent"], default: "info" },
      }),
      policies: section(
        Object.fromEntries(
          policies.map((policy) => [policy.name, { default: {}, ...withoutNullable(policy.optionsSchema) }]),
        ),
      ),
    },
  };
}

/**
 * A policy's options schema as the config checks it. JSONSchemaType has an option that may be
 * unset (`T | undefined`) written `nullable: true`; in the config such an option is left out, and
 * a null stays refused, as it was before options were typed.
 */
function withoutNullable(schema: object): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (keyword === "nullable") continue;
    kept[keyword] =
      keyword === "properties"
        ? Object.fromEntries(
            Object.entries(value as object).map(([name, sub]) => [name, withoutNullable(sub)]),
          )
        : (keyword === "items" || keyword === "additionalProperties") && typeof value === "object"
          ? withoutNullable(value as object)
          : SCHEMA_LISTS.has(keyword)
            ? (value as object[]).map(withoutNullable)
            : value;
  }
  return kept;
}
const SCHEMA_LISTS = new Set(["anyOf", "oneOf", "allOf"]);

/** Environment variable -> JSON pointer of the config field it sets. */
export const CORE_ENVIRONMENT: Readonly<Record<string, string>> = {
  PORT: "/port",
  HOST: "/host",
  OPS_PORT: "/opsPort",
  UPSTREAM_URL: "/upstream/url",
  ENVIRONMENT: "/environment",
  OPENAPI_FILE: "/openapi",
  LOG_LEVEL: "/log/level",
  WORKERS: "/workers",
};

/** A setting as the README's Configuration table names it: its environment variable if it has one, and its field ("HOST / host"). */
export function settingName(pointer: string): string {
  const field = pointer.slice(1).replaceAll("/", ".");
  const variable = Object.keys(CORE_ENVIRONMENT).find((name) => CORE_ENVIRONMENT[name] === pointer);
  return variable === undefined ? field : `${variable} / ${field}`;
}

export interface LoadConfigOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** Overrides applied last, for tests and embedding: a partial config object. */
  readonly overrides?: Readonly<Record<string, unknown>>;
  readonly policies: readonly AnyPolicyDefinition[];
}

export function loadConfig(options: LoadConfigOptions): GatewayConfig {
  const env = options.env ?? process.env;
  const file = env.GATEWAY_CONFIG || DEFAULT_CONFIG_FILE;
  let raw: Record<string, unknown>;
  try {
    raw = parseJsonText(readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`config ${file}: ${(error as Error).message}`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new ConfigError(`config ${file}: must be a JSON object`);
  }
  const sources = new Map<string, string>();
  const mapping: Record<string, string> = { ...CORE_ENVIRONMENT };
  for (const policy of options.policies) {
    for (const [variable, option] of Object.entries(policy.environment ?? {})) {
      mapping[variable] = `/policies/${policy.name}/${option}`;
    }
  }
  for (const [variable, pointer] of Object.entries(mapping)) {
    const value = env[variable];
    if (value === undefined || value === "") continue;
    setPointer(raw, pointer, /^[0-9]+$/.test(value) ? Number(value) : value);
    sources.set(pointer, variable);
  }
  if (options.overrides) mergeInto(raw, options.overrides);
  return validateConfig(raw, options.policies, (pointer) => {
    for (const [field, variable] of sources) if (pointer.startsWith(field)) return `${variable} (${field})`;
    return `${file}: ${pointer || "/"}`;
  });
}

export function validateConfig(
  raw: Record<string, unknown>,
  policies: readonly AnyPolicyDefinition[],
  describe: (pointer: string) => string = (pointer) => pointer || "/",
): GatewayConfig {
  // verbose: an error carries its schema, so that "one of these" fields can say what they accept.
  const ajv = createSchemaValidator({ useDefaults: true, allowUnionTypes: true, verbose: true });
  ajv.addFormat("ip-range", isIpRange);
  const validate = ajv.compile(configSchema(policies));
  const config = structuredClone(raw);
  if (!validate(config)) {
    const wording = {
      field: describe,
      unknownProperty: (pointer: string, property: string) =>
        `${describe(`${pointer}/${escapePointerToken(property)}`)} is not a known setting`,
    };
    throw new ConfigError(`invalid config: ${describeSchemaError(validate.errors, wording)}`);
  }
  const { server, port, opsPort } = config as unknown as GatewayConfig;
  // Metrics and reports must never be served on the public port.
  if (port !== 0 && port === opsPort) {
    throw new ConfigError(
      `invalid config: ${describe("/opsPort")} must differ from ${describe("/port")} (${port})`,
    );
  }
  // Node refuses a headers timeout above the request timeout with a stack trace; say it here.
  if (server.headersTimeoutMs > server.requestTimeoutMs) {
    throw new ConfigError(
      `invalid config: ${describe("/server/headersTimeoutMs")} must not be above /server/requestTimeoutMs`,
    );
  }
  if (server.shutdownDrainMs >= server.shutdownTimeoutMs) {
    throw new ConfigError(
      `invalid config: ${describe("/server/shutdownDrainMs")} must be below /server/shutdownTimeoutMs`,
    );
  }
  return deepFreeze(config) as unknown as GatewayConfig;
}

function setPointer(target: Record<string, unknown>, pointer: string, value: unknown) {
  const keys = pointer.slice(1).split("/");
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (next === null || typeof next !== "object" || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1] as string] = value;
}

function mergeInto(target: Record<string, unknown>, source: Readonly<Record<string, unknown>>) {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (
      value !== null &&
      typeof value === "object" &&
      !Array.isArray(value) &&
      existing !== null &&
      typeof existing === "object" &&
      !Array.isArray(existing)
    ) {
      mergeInto(existing as Record<string, unknown>, value as Record<string, unknown>);
    } else target[key] = value;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

function projectRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(resolve(dir, "package.json"))) return dir;
    if (dirname(dir) === dir)
      throw new Error(`no package.json above ${from}: the gateway runs from its project`);
  }
}

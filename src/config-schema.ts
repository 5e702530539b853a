// What the gateway config is: the deployment's choices only (what the interface is lives in the
// OpenAPI document). Its TypeScript shape and the JSON Schema that checks it, with each
// setting's default and bounds, side by side: a new setting is one field in each, and a README row.
import type { AnyPolicyDefinition } from "./policy.ts";
import { DEFAULT_OPENAPI_FILE } from "./project-files.ts";

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

export function configSchema(policies: readonly AnyPolicyDefinition[]) {
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

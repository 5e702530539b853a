// What the gateway config is: the deployment's choices only (what the interface is lives in the
// OpenAPI document). Its TypeScript shape first, then the JSON Schema that checks it, with each
// setting's default, bounds and description. The schema is typed as ajv's JSONSchemaType of the
// interface, so the compiler holds the two equal: a setting in one and not the other, or typed
// differently, does not compile (test/unit/config-schema.test.ts checks what JSONSchemaType
// cannot: a property the schema adds, a setting always present without a default).
// The descriptions are what docs/reference/configuration.md says of each field (npm run docs).
import type { JSONSchemaType } from "ajv";
import type { AnyPolicyDefinition } from "./policy-registry.ts";
import { DEFAULT_OPENAPI_FILE } from "./project-files.ts";

/**
 * The validated config, defaults filled in and frozen. A setting the config may leave unset is
 * optional (`?`): absent then, never null.
 */
export interface GatewayConfig {
  /** The JSON Schema an editor checks the file against; the gateway does not read it. */
  readonly $schema?: string;
  /** proxy: the gateway forwards to the backend; decision: a proxy in front asks it (src/decision/). */
  readonly mode: "proxy" | "decision";
  readonly port: number;
  readonly host: string;
  readonly opsPort: number;
  readonly opsHost: string;
  /** The file holding the ops port's bearer token; unset: the ops port asks for none. */
  readonly opsTokenFile?: string;
  /** With a token, whether /metrics is served without it. */
  readonly opsMetricsOpen: boolean;
  /** Explicitly chosen environment; unset means none was chosen. */
  readonly environment?: "production" | "staging";
  readonly openapi: string;
  /** The public base path, when the document's servers do not say it; unset means theirs. */
  readonly basePath?: string;
  readonly workers: number | "auto";
  readonly document: {
    /** Reload a candidate with breaking changes; one that weakens security is refused all the same. */
    readonly allowBreaking: boolean;
    /** Quiet time after a change to the document's files before they are read (a writer finishing). */
    readonly reloadDebounceMs: number;
  };
  readonly upstream: {
    readonly url?: string;
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
    readonly opsKeepAliveTimeoutMs: number;
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
  /**
   * Each policy's options by its name: an object its own schema checks (optionsOf() reads them
   * typed by the policy's definition).
   */
  readonly policies: Readonly<Record<string, object>>;
}

const PORT = { type: "integer", minimum: 0, maximum: 65535 } as const;
const MILLISECONDS = { type: "integer", minimum: 1, maximum: 86_400_000 } as const;
const URL_STRING = { type: "string", pattern: "^https?://[^\\s]+$" } as const;

/**
 * A group of settings: an object of known fields only. Every field has a default or may be unset,
 * so none is required, and a section the file leaves out is there with its fields' defaults
 * (checkedConfigSchema).
 */
function section<Properties>(description: string, properties: Properties) {
  return { type: "object", additionalProperties: false, required: [], description, properties } as const;
}

/**
 * The config's JSON Schema as the compiler holds it to GatewayConfig and the reference page
 * reads it, the policies' options under `policies.<name>`. ajv checks a file against
 * checkedConfigSchema, which follows from it.
 */
export function configSchema(policies: readonly AnyPolicyDefinition[]) {
  // Descriptions are documentation only: ajv reads them nowhere but in the branches of an anyOf,
  // where they word a start-up error (schema-error.ts), so a field's own never changes a message.
  return {
    type: "object",
    additionalProperties: false,
    required: [],
    properties: {
      $schema: {
        type: "string",
        nullable: true,
        description: "The JSON Schema an editor checks the file against; the gateway does not read it",
      },
      mode: {
        type: "string",
        enum: ["proxy", "decision"],
        default: "proxy",
        description:
          "`proxy`: the gateway sits in the path and forwards to the backend. `decision`: a proxy the team already runs (nginx `auth_request`, Envoy `ext_authz`) asks the gateway at `/decide/<proxy>` whether to let each request through, and forwards it itself; no upstream is needed (docs/plugin-mode.md)",
      },
      port: { ...PORT, default: 8080, description: "Public port (the API)" },
      host: { type: "string", default: "0.0.0.0", description: "Public bind address" },
      opsPort: {
        ...PORT,
        default: 9090,
        description: "Ops port: `/metrics`, `/healthz`, `/readyz`, reports. Never the public port",
      },
      opsHost: {
        type: "string",
        default: "0.0.0.0",
        description: "Ops bind address (e.g. `127.0.0.1` when only a local agent scrapes)",
      },
      opsTokenFile: {
        type: "string",
        nullable: true,
        minLength: 1,
        description:
          "A file holding the ops port's bearer token (a mounted Secret; read like the key file, reloaded when it changes or on `SIGHUP`). Set: every ops path but `/healthz` and `/readyz` needs `Authorization: Bearer <token>`, `/metrics` included unless `opsMetricsOpen`. Unset: the ops port asks for no token",
      },
      opsMetricsOpen: {
        type: "boolean",
        default: false,
        description:
          "With `opsTokenFile` set, serve `/metrics` without the token (its labels name consumers: open it only where the port is private)",
      },
      environment: {
        type: "string",
        nullable: true,
        enum: ["production", "staging"],
        description:
          "Selects `upstream.environments.<name>` when `UPSTREAM_URL` is unset; when set and no upstream is known for it, start-up fails instead of serving the demo. Unset: `production` when an upstream is set, the demo without",
      },
      openapi: {
        type: "string",
        minLength: 1,
        default: DEFAULT_OPENAPI_FILE,
        description:
          "The OpenAPI description, JSON or YAML, 3.0 or 3.1 (a relative path is read from the working directory)",
      },
      basePath: {
        type: "string",
        nullable: true,
        pattern: "^(?:/[A-Za-z0-9._~!$&'()*+,=:@-]+)*/?$",
        description:
          'The public base path (e.g. `/v1`, or `""` for none). Set, it replaces the path of the document\'s server URLs: needed when they disagree, or to serve a document without servers under a path. Unset: the path the server URLs share',
      },
      workers: {
        anyOf: [
          { type: "integer", minimum: 1, maximum: 256 },
          { type: "string", const: "auto" },
        ],
        default: 1,
        description: "Worker processes; `auto` = one per core",
      },
      document: section("Reloading the OpenAPI description while serving (docs/openapi.md)", {
        allowBreaking: {
          type: "boolean",
          default: false,
          description:
            "Reload a changed document even when it breaks clients of the running one (an operation, parameter, enum value, response member or status removed; a bound tightened; a member made required). A change that weakens `security` is refused all the same",
        },
        reloadDebounceMs: {
          ...MILLISECONDS,
          default: 500,
          description:
            "After a change to the document's folder (or a `$ref`'d file's), how long it must stay quiet before the files are read again",
        },
      }),
      upstream: section("The backend and the connections to it", {
        url: {
          ...URL_STRING,
          nullable: true,
          description:
            "The backend, with its own base path, e.g. `http://pets:3000/v1` or `https://pets.example/v1` (its certificate is verified; a private authority goes in Node's `NODE_EXTRA_CA_CERTS`). Unset: the upstream of `environment`, else the bundled demo backend",
        },
        environments: section("The backend of each environment, used when `UPSTREAM_URL` is unset", {
          production: {
            ...URL_STRING,
            nullable: true,
            description: "The backend when `environment` is `production`, e.g. `http://pets:3000/v1`",
          },
          staging: {
            ...URL_STRING,
            nullable: true,
            description: "The backend when `environment` is `staging`, e.g. `http://pets-staging:3000/v1`",
          },
        }),
        connectTimeoutMs: {
          ...MILLISECONDS,
          default: 2000,
          description: "Connecting to the backend; past it: 504",
        },
        timeoutMs: {
          ...MILLISECONDS,
          default: 10_000,
          description: "The response deadline, enforced by the gateway's own timer: 504",
        },
        maxSockets: {
          type: "integer",
          minimum: 1,
          maximum: 65_536,
          default: 256,
          description: "The bound on connections to the backend (undici's Pool `connections`)",
        },
        maxFreeSockets: {
          type: "integer",
          minimum: 0,
          maximum: 65_536,
          default: 256,
          description:
            "Accepted and ignored since the backend is reached through undici: an idle connection closes after `upstream.idleSocketTimeoutMs`, and there are never more than `upstream.maxSockets`",
        },
        // Below Node's own 5 s server keep-alive, so the gateway drops an idle socket first.
        idleSocketTimeoutMs: {
          ...MILLISECONDS,
          default: 4000,
          description:
            "Idle keep-alive connections are closed before the backend's own (Node: 5 s); a shorter `Keep-Alive: timeout` from the backend wins",
        },
        probeIntervalMs: {
          anyOf: [
            { type: "integer", const: 0 },
            { type: "integer", minimum: 100, maximum: 86_400_000 },
          ],
          default: 10_000,
          description:
            "After one to two such intervals with no request to the backend, a connect (with the TLS handshake for `https`) tells `gateway_upstream_up` whether it is reachable; also once at start-up. 0: never (the gauge then reads 0 until the first request); else at least 100",
        },
      }),
      server: section("The public and the ops servers: timeouts, caps and shutdown", {
        // Above the 60 s idle timeout of common load balancers, so they close first.
        keepAliveTimeoutMs: {
          ...MILLISECONDS,
          default: 75_000,
          description: "Client keep-alive; above the 60 s idle timeout of common load balancers",
        },
        opsKeepAliveTimeoutMs: {
          ...MILLISECONDS,
          default: 5000,
          description:
            "Keep-alive on the ops port: probes and scrapes come seconds apart, and an idle connection there only holds one of `server.maxOpsConnections`",
        },
        headersTimeoutMs: {
          ...MILLISECONDS,
          default: 10_000,
          description:
            "A client's request headers must arrive within this, or it is cut off (checked every second); not above `requestTimeoutMs`",
        },
        requestTimeoutMs: {
          ...MILLISECONDS,
          default: 30_000,
          description:
            "A client's whole request must arrive within this, or it is cut off (checked every second)",
        },
        maxRequestBodyBytes: {
          type: "integer",
          minimum: 1,
          default: 65_536,
          description: "Larger request bodies get 413, counted on the wire",
        },
        maxResponseBodyBytes: {
          type: "integer",
          minimum: 1,
          default: 1_048_576,
          description: "Cap on a backend answer buffered for validation",
        },
        maxBufferedBytes: {
          type: "integer",
          minimum: 1,
          default: 67_108_864,
          description:
            "Bytes of answers held to be judged whole, per process (so `WORKERS` times this in all): once one more answer of `server.maxResponseBodyBytes` would not fit, a request whose answer would be held gets 503 `GATEWAY_BUSY`",
        },
        maxQueuedAnswerBytes: {
          type: "integer",
          minimum: 1,
          default: 1_048_576,
          description:
            "Bytes of a connection's held answers not yet handed to the kernel past which its next pipelined request waits",
        },
        maxHeaderBytes: {
          type: "integer",
          minimum: 1024,
          maximum: 1_048_576,
          default: 16_384,
          description: "Larger request headers get 431",
        },
        maxConnections: { type: "integer", minimum: 1, default: 10_000, description: "Client connections" },
        maxOpsConnections: {
          type: "integer",
          minimum: 1,
          default: 64,
          description:
            "Connections to the ops port, which has the public port's timeouts too: a kubelet's probes, a few scrapers and the image's health check need a handful. Past it a newcomer closes the connection idle longest, so a probe is never refused",
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
          description:
            "Peers whose `X-Forwarded-For` is kept and appended to, and whose `X-Real-IP`, `CF-Connecting-IP` and the like reach the backend (from any other peer they are removed); in decision mode, the proxies whose `X-Forwarded-For` names the client of a decision (from any other peer the peer is the client): IP addresses and ranges (`10.0.0.0/8`, `fd00::/8`), matched as addresses (a host name is refused)",
        },
        sendTimeoutMs: {
          ...MILLISECONDS,
          default: 60_000,
          description:
            "A connection whose answer has not moved towards the client for this long is cut (`SEND_TIMEOUT`, logged 499)",
        },
        sendDeadlineMs: {
          ...MILLISECONDS,
          default: 300_000,
          description:
            "The longest one answer may take to send, whatever its pace; then the connection is cut",
        },
        shutdownDrainMs: {
          type: "integer",
          minimum: 0,
          maximum: 600_000,
          default: 3000,
          description:
            "Graceful shutdown: after `SIGTERM` or `SIGINT`, `/readyz` answers 503 at once and requests are still served this long while load balancers notice; below `shutdownTimeoutMs`",
        },
        shutdownTimeoutMs: {
          ...MILLISECONDS,
          default: 20_000,
          description:
            "Graceful shutdown: past this the process exits 1 with whatever is still open (set Kubernetes' `terminationGracePeriodSeconds` above it)",
        },
      }),
      log: section("The log on stdout", {
        level: {
          type: "string",
          enum: ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
          default: "info",
          description: "The pino level; `warn` silences the access log",
        },
      }),
      policies: section(
        "The options of each policy, one section per policy",
        Object.fromEntries(policies.map((policy) => [policy.name, policyOptions(policy.optionsSchema)])),
      ),
    },
  } satisfies JSONSchemaType<GatewayConfig>;
}

/**
 * A policy's options as the config holds them: an object, `{}` when the file leaves them out,
 * checked by the policy's own schema (which the compiler holds to its Options type: OptionsSchema).
 */
function policyOptions(schema: object) {
  return { type: "object", default: {}, ...schema } as const;
}

/**
 * The schema ajv checks a config file against: configSchema, with two things JSONSchemaType
 * cannot write. A section the file leaves out is `{}`, which ajv then fills with its fields'
 * defaults (JSONSchemaType wants a section's default to be a whole section). And a setting that
 * may be unset, which JSONSchemaType writes `nullable: true`, is left out of the file, never null:
 * `nullable` is dropped, so a null stays refused.
 */
export function checkedConfigSchema(policies: readonly AnyPolicyDefinition[]): Record<string, unknown> {
  return withoutNullable(withSectionDefaults(configSchema(policies)));
}

/** Every section under `properties` (not the root: ajv ignores a default there) defaults to `{}`. */
function withSectionDefaults(schema: { readonly properties: object }): Record<string, unknown> {
  const properties = Object.entries(schema.properties).map(([name, field]: [string, object]) => [
    name,
    isSection(field) ? { default: {}, ...withSectionDefaults(field) } : field,
  ]);
  return { ...schema, properties: Object.fromEntries(properties) };
}

function isSection(schema: object): schema is { readonly properties: object } {
  return "properties" in schema && !("default" in schema);
}

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

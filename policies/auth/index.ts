// Bearer API keys on every operation the document does not make public (`security: []` on the
// operation itself: access.ts). Keys live in a file as SHA-256 digests only; a presented
// key is hashed and looked up by its digest in a hash table, so the lookup costs the same for 1
// key or 100,000, and what its timing could reveal is the digest of the attacker's own guess.
import { hash } from "node:crypto";
import type { JSONSchemaType } from "ajv";
import { Counter, Gauge } from "prom-client";
import { declareErrors, definePolicy, type Exchange, type OperationPolicy } from "../../src/policy.ts";
import { credentialsOf } from "../../src/redaction.ts";
import { ConfigError } from "../../src/startup-errors.ts";
import { accessOf } from "./access.ts";
import { bearerCredential } from "./bearer-credential.ts";
import { digestPrefix } from "./key-file.ts";
import { openKeyStore } from "./key-store.ts";
import { sameDigest } from "./key-table.ts";

export interface AuthOptions {
  readonly keysFile: string | undefined;
  /** How often the key file is checked for changes (a revoked key is refused within this). */
  readonly reloadIntervalMs: number;
  /** Header the gateway sets to the consumer's name for the backend (a client's copy is removed). */
  readonly consumerHeader: string;
  /** What reaches the backend in Authorization: the client's own (pass), an upstream credential, or nothing. */
  readonly upstreamAuthorization: "pass" | "replace" | "strip";
  /** With "replace": the environment variable holding the credential sent as Authorization. */
  readonly upstreamCredentialEnv: string | undefined;
}

const errors = declareErrors("auth", {
  MISSING_API_KEY: { status: 401, message: "A bearer API key is required" },
  INVALID_API_KEY: { status: 401, message: "The API key is not valid" },
});
const MISSING = errors.error("MISSING_API_KEY", undefined, { "www-authenticate": "Bearer" });
const INVALID = errors.error("INVALID_API_KEY", undefined, {
  "www-authenticate": 'Bearer error="invalid_token"',
});
// The consumer header must not be able to overwrite what the request is made of.
const RESERVED_HEADERS = new Set([
  "authorization",
  "host",
  "content-length",
  "content-type",
  "transfer-encoding",
  "connection",
  "x-request-id",
  "x-forwarded-for",
]);
// "Scheme credentials" is sent as it is; a bare credential is a bearer key, like the clients'.
const WITH_SCHEME = /^[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]* +\S/;
const HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

const optionsSchema: JSONSchemaType<AuthOptions> = {
  type: "object",
  additionalProperties: false,
  required: [],
  description:
    "Bearer API keys on every operation but those the document makes public, checked against a file of their SHA-256 digests",
  properties: {
    keysFile: {
      type: "string",
      nullable: true,
      minLength: 1,
      description: "The key file (digests only); required outside the demo",
    },
    // At most 4 s, so that a revoked key is refused within 5 s whatever the setting.
    reloadIntervalMs: {
      type: "integer",
      minimum: 100,
      maximum: 4000,
      default: 2000,
      description: "How often the key file is checked for changes (also on `SIGHUP`)",
    },
    consumerHeader: {
      type: "string",
      pattern: "^[a-z0-9][a-z0-9-]*$",
      default: "x-consumer",
      description: "The header carrying the consumer's name to the backend (a client's copy is removed)",
    },
    upstreamAuthorization: {
      type: "string",
      enum: ["pass", "replace", "strip"],
      default: "pass",
      description:
        "What the backend receives in `Authorization`: `pass` the client's own, unchanged; `replace` the credential in the environment variable `upstreamCredentialEnv` names (a bare value as `Bearer <value>`, a value with a scheme as it is); `strip` none",
    },
    upstreamCredentialEnv: {
      type: "string",
      nullable: true,
      pattern: "^[A-Z_][A-Z0-9_]*$",
      description: "With `replace`: the environment variable holding the backend's credential",
    },
  },
};

interface AuthMetrics {
  readonly keys: Gauge;
  readonly reloads: Counter<"result">;
}

export default definePolicy<AuthOptions, AuthMetrics>({
  name: "auth",
  errors,
  environment: { API_KEYS_FILE: "keysFile" },
  optionsSchema,
  metrics: (registry) => ({
    // Every worker loads the same key file: summing over workers would multiply the count.
    keys: new Gauge({
      name: "gateway_api_keys",
      help: "API keys currently loaded",
      aggregator: "max",
      registers: [registry],
    }),
    reloads: new Counter({
      name: "gateway_api_key_reloads_total",
      help: "Reloads of the API key file, by result (ok, error); every worker reloads on its own",
      labelNames: ["result"] as const,
      registers: [registry],
    }),
  }),
  plan(_options, { api }) {
    const access = accessOf(api);
    return {
      warnings: access.warnings,
      operation(operation) {
        const { public: open, unlike } = access.of(operation);
        if (open) {
          return {
            public: true,
            text: ["public: no key needed (the operation says security: [])"],
            data: { key: "none" },
          };
        }
        const line = unlike
          ? `needs a bearer key (the document says ${unlike}; a bearer key is required instead)`
          : "needs a bearer key";
        return { text: [line], data: { key: "bearer", ...(unlike ? { documentAsks: unlike } : {}) } };
      },
    };
  },
  create(options, { api, logger, now }, metrics) {
    const { keysFile, consumerHeader: header, upstreamAuthorization: mode } = options;
    if (keysFile === undefined) {
      throw new ConfigError(
        "policies.auth.keysFile is required outside the demo: set API_KEYS_FILE to a key file (npm run keys -- add <consumer> makes one)",
      );
    }
    if (RESERVED_HEADERS.has(header)) {
      throw new ConfigError(`policies.auth.consumerHeader must not be ${header}`);
    }
    const upstreamCredential = mode === "replace" ? readUpstreamCredential(options) : undefined;
    // The backend's credential must not come out either (a backend that echoes its headers).
    const upstreamParts = credentialsOf(upstreamCredential);

    const store = openKeyStore({ keysFile, reloadIntervalMs: options.reloadIntervalMs, logger, metrics });
    const access = accessOf(api);
    const authenticated = authenticate(header, mode, upstreamCredential, store, now);

    return {
      reload: store.reload,
      // The challenge of every 401 (MISSING, INVALID).
      responseHeaders: ["www-authenticate"],
      // Who the consumer is and what credential the backend gets are the gateway's to say.
      requestHeaders: [header, "authorization"],
      // Somebody's key sent as a request id, with no key or another one in Authorization, would be
      // echoed in the answer and written to every log line of the request.
      // A digest from the key file is not a key, but it must not come out anywhere either.
      recognizesCredential: (value) => {
        for (const part of upstreamParts) if (value.includes(part)) return true;
        const { entries } = store.current();
        return entries.has(keyDigest(value)) || entries.has(value.toLowerCase());
      },
      forOperation: (operation) => {
        if (!access.of(operation).public) return authenticated;
        return {
          onRequest(exchange) {
            // Only the gateway says who the consumer is, on a public operation too; and the
            // backend gets the Authorization it gets from every other operation.
            exchange.setUpstreamHeader(header, undefined);
            setUpstreamAuthorization(exchange, mode, upstreamCredential);
            return undefined;
          },
        };
      },
      close: store.close,
    };
  },
});

/** The phase of every operation that needs a key. */
function authenticate(
  header: string,
  mode: AuthOptions["upstreamAuthorization"],
  upstreamCredential: string | undefined,
  store: ReturnType<typeof openKeyStore>,
  now: () => number,
): OperationPolicy {
  return {
    onRequest(exchange) {
      // Only the gateway says who the consumer is.
      exchange.setUpstreamHeader(header, undefined);
      const authorization = exchange.headers.authorization;
      const key = authorization === undefined ? undefined : bearerCredential(authorization);
      if (key === undefined) {
        exchange.notes.authFailure = authorization === undefined ? "no header" : "not bearer";
        return MISSING;
      }
      if (key === "") {
        exchange.notes.authFailure = "empty key";
        return INVALID;
      }
      const digest = keyDigest(key);
      const keys = store.current();
      const entry = keys.entries.get(digest);
      // The table found the entry by the whole digest already; the comparison stays
      // constant-time should the table ever be keyed by less.
      if (entry === undefined || !sameDigest(keys.digests, entry.at, digest)) {
        exchange.notes.authFailure = "unknown key";
        return INVALID;
      }
      if (entry.notAfter !== undefined && now() > entry.notAfter) {
        // Whose key expired helps the operator; the client learns only that it is invalid.
        exchange.notes.authFailure = "expired key";
        exchange.notes.keyConsumer = entry.consumer;
        exchange.notes.keyDigest = digestPrefix(digest);
        return INVALID;
      }
      exchange.identify(entry.consumer);
      exchange.setUpstreamHeader(header, entry.consumer);
      setUpstreamAuthorization(exchange, mode, upstreamCredential);
      return undefined;
    },
  };
}

/** The Authorization the backend gets, the same for public operations and keyed ones. */
function setUpstreamAuthorization(
  exchange: Exchange,
  mode: AuthOptions["upstreamAuthorization"],
  upstreamCredential: string | undefined,
): void {
  if (mode === "strip") exchange.setUpstreamHeader("authorization", undefined);
  else if (mode === "replace") exchange.setUpstreamHeader("authorization", upstreamCredential);
}

/**
 * The hex SHA-256 of a key as the client sent it. Node reads a header's bytes as latin1, one
 * character per byte: a key with bytes beyond ASCII (UTF-8 text) is hashed from those bytes, so
 * that the key file's digest of the key's UTF-8 bytes finds it. As hex text, not a Buffer: a
 * Buffer made by crypto is a new ArrayBuffer (a backing store for the collector to track) on
 * every request.
 */
export function keyDigest(key: string): string {
  for (let i = 0; i < key.length; i++) {
    if (key.charCodeAt(i) > 0x7f) return hash("sha256", Buffer.from(key, "latin1"), "hex");
  }
  return hash("sha256", key, "hex");
}

function readUpstreamCredential(options: AuthOptions): string {
  const variable = options.upstreamCredentialEnv;
  if (variable === undefined) {
    throw new ConfigError(
      "policies.auth.upstreamAuthorization is replace: set policies.auth.upstreamCredentialEnv to the variable holding the backend's credential",
    );
  }
  const value = process.env[variable]?.trim();
  if (!value) {
    throw new ConfigError(
      `policies.auth.upstreamCredentialEnv: the environment variable ${variable} is empty`,
    );
  }
  // Never quote the value: it is a secret.
  if (!HEADER_VALUE.test(value)) {
    throw new ConfigError(
      `policies.auth.upstreamCredentialEnv: ${variable} holds characters a header cannot carry`,
    );
  }
  return WITH_SCHEME.test(value) ? value : `Bearer ${value}`;
}

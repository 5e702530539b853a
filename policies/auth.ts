// Bearer API keys on every operation. Keys live in a file as SHA-256 digests only; a presented
// key is hashed and looked up by digest, so the lookup costs the same for 1 key or 100,000 and
// never compares secrets byte by byte.
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { Ajv } from "ajv";
import { type GatewayError, gatewayError } from "../src/errors.ts";
import { definePolicy } from "../src/policy.ts";

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

interface KeyEntry {
  readonly consumer: string;
  readonly digest: Buffer;
  readonly notAfter: number | undefined;
}

const KEY_FILE_SCHEMA = {
  type: "object",
  required: ["keys"],
  additionalProperties: false,
  properties: {
    keys: {
      type: "array",
      items: {
        type: "object",
        required: ["consumer", "sha256"],
        properties: {
          consumer: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" },
          sha256: { type: "string", pattern: "^[0-9a-f]{64}$" },
          notAfter: { type: "string", format: "date-time" },
        },
      },
    },
  },
};

const BEARER = /^bearer(?: +(.*))?$/i;
const MISSING = gatewayError("MISSING_API_KEY", undefined, { "www-authenticate": "Bearer" });
const INVALID = gatewayError("INVALID_API_KEY", undefined, {
  "www-authenticate": 'Bearer error="invalid_token"',
});

export default definePolicy<AuthOptions>({
  name: "auth",
  environment: { API_KEYS_FILE: "keysFile" },
  optionsSchema: {
    type: "object",
    additionalProperties: false,
    properties: {
      keysFile: { type: "string", minLength: 1 },
      reloadIntervalMs: { type: "integer", minimum: 100, maximum: 60_000, default: 2000 },
      consumerHeader: { type: "string", pattern: "^[a-z0-9-]+$", default: "x-consumer" },
      upstreamAuthorization: { enum: ["pass", "replace", "strip"], default: "pass" },
      upstreamCredentialEnv: { type: "string", pattern: "^[A-Z_][A-Z0-9_]*$" },
    },
  },
  create(options, { logger, metrics, now }) {
    const { keysFile } = options;
    if (keysFile === undefined) {
      throw new Error(
        "policies.auth.keysFile is required: set API_KEYS_FILE to a key file (npm run keys -- add <consumer> makes one)",
      );
    }
    let upstreamAuthorization: string | undefined;
    if (options.upstreamAuthorization === "replace") {
      const variable = options.upstreamCredentialEnv;
      upstreamAuthorization = variable === undefined ? undefined : process.env[variable];
      if (!upstreamAuthorization) {
        throw new Error(
          "policies.auth.upstreamAuthorization is replace: set upstreamCredentialEnv to a non-empty variable",
        );
      }
    }
    const validateKeyFile = new Ajv({ strict: true, allErrors: false })
      .addFormat("date-time", true)
      .compile(KEY_FILE_SCHEMA);
    const load = (): Map<string, KeyEntry> => {
      const parsed: unknown = JSON.parse(readFileSync(keysFile, "utf8"));
      if (!validateKeyFile(parsed)) {
        const error = validateKeyFile.errors?.[0];
        throw new Error(`${error?.instancePath || "/"} ${error?.message ?? "is not valid"}`);
      }
      const table = new Map<string, KeyEntry>();
      for (const key of (parsed as { keys: { consumer: string; sha256: string; notAfter?: string }[] })
        .keys) {
        table.set(key.sha256, {
          consumer: key.consumer,
          digest: Buffer.from(key.sha256, "hex"),
          notAfter: key.notAfter === undefined ? undefined : Date.parse(key.notAfter),
        });
      }
      return table;
    };
    let keys: Map<string, KeyEntry>;
    try {
      keys = load();
    } catch (error) {
      throw new Error(`API key file ${keysFile}: ${(error as Error).message}`);
    }
    metrics.apiKeys.set(keys.size);
    let lastStamp = stamp(keysFile);

    const reload = (why: string) => {
      try {
        keys = load();
        metrics.apiKeys.set(keys.size);
        metrics.apiKeyReloads.labels("ok").inc();
        logger.info({ keys: keys.size, why }, "api keys reloaded");
      } catch (error) {
        // Keep serving with the last good set: a half-written file must not lock everyone out.
        metrics.apiKeyReloads.labels("error").inc();
        logger.error(
          { error: (error as Error).message, why },
          "api key reload failed; keeping the previous keys",
        );
      }
    };
    // Polling, not fs.watch: Kubernetes swaps a mounted Secret through a symlink, which a watch on
    // the file misses, and a stat every few seconds costs nothing.
    const poll = setInterval(() => {
      const now = stamp(keysFile);
      if (now !== lastStamp) {
        lastStamp = now;
        reload("file changed");
      }
    }, options.reloadIntervalMs);
    poll.unref();
    const onHangup = () => reload("SIGHUP");
    process.on("SIGHUP", onHangup);

    const authenticate = (authorization: string | undefined): GatewayError | string => {
      if (authorization === undefined) return MISSING;
      const match = BEARER.exec(authorization);
      if (!match) return MISSING;
      const key = match[1]?.trim() ?? "";
      if (key === "") return INVALID;
      const digest = createHash("sha256").update(key).digest();
      const entry = keys.get(digest.toString("hex"));
      // The map finds the candidate by digest; the final comparison is constant-time anyway.
      if (!entry || !timingSafeEqual(entry.digest, digest)) return INVALID;
      if (entry.notAfter !== undefined && now() > entry.notAfter) return INVALID;
      return entry.consumer;
    };

    const header = options.consumerHeader;
    const mode = options.upstreamAuthorization;
    return {
      forOperation: () => ({
        onRequest(exchange) {
          const headers = exchange.req.headers;
          delete headers[header];
          const result = authenticate(headers.authorization);
          if (typeof result !== "string") return result;
          exchange.consumer = result;
          headers[header] = result;
          if (mode === "strip") delete headers.authorization;
          else if (mode === "replace") headers.authorization = upstreamAuthorization;
          return undefined;
        },
      }),
      close() {
        clearInterval(poll);
        process.off("SIGHUP", onHangup);
      },
    };
  },
});

function stamp(file: string): string {
  try {
    const info = statSync(file);
    return `${info.mtimeMs}:${info.size}:${info.ino}`;
  } catch {
    return "missing";
  }
}

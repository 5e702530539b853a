// Bearer API keys on every operation. Keys live in a file as SHA-256 digests only; a presented
// key is hashed and looked up by its digest in a hash table, so the lookup costs the same for 1
// key or 100,000, and what its timing could reveal is the digest of the attacker's own guess.
import { hash, timingSafeEqual } from "node:crypto";
import { readFileSync, type Stats, statSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import type { JSONSchemaType } from "ajv";
import { Counter, Gauge } from "prom-client";
import { ConfigError } from "../../src/config.ts";
import { declareErrors } from "../../src/errors.ts";
import { definePolicy } from "../../src/policy.ts";
import { bearerCredential } from "../../src/untrusted-text.ts";
import { digestPrefix, parseKeyFile } from "./key-file.ts";

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
  /** Where the key's digest starts in its table's `digests`. */
  readonly at: number;
  readonly notAfter: number | undefined;
}

interface KeyTable {
  /** By the hex digest. */
  readonly entries: ReadonlyMap<string, KeyEntry>;
  /**
   * Every digest, back to back: one buffer instead of a Buffer object per key, 10-14 MB less heap
   * with 100,000 keys (consumers' names are shared too).
   */
  readonly digests: Buffer;
}

const DIGEST_BYTES = 32;

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
  properties: {
    keysFile: { type: "string", nullable: true, minLength: 1 },
    // At most 4 s, so that a revoked key is refused within 5 s whatever the setting.
    reloadIntervalMs: { type: "integer", minimum: 100, maximum: 4000, default: 2000 },
    consumerHeader: { type: "string", pattern: "^[a-z0-9][a-z0-9-]*$", default: "x-consumer" },
    upstreamAuthorization: { type: "string", enum: ["pass", "replace", "strip"], default: "pass" },
    upstreamCredentialEnv: { type: "string", nullable: true, pattern: "^[A-Z_][A-Z0-9_]*$" },
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
  create(options, { logger, now }, metrics) {
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

    let keys: KeyTable;
    // The first load is synchronous and fatal: a gateway that cannot read its keys does not start.
    try {
      keys = tableOf(readFileSync(keysFile, "utf8"));
    } catch (error) {
      throw new ConfigError(`API key file ${keysFile}: ${describeLoadError(error)}`);
    }
    metrics.keys.set(keys.entries.size);
    let lastStamp = stampOf(statSync(keysFile, { throwIfNoEntry: false }));
    let closed = false;

    const load = async (why: string) => {
      try {
        const next = tableOf(await readFile(keysFile, "utf8"));
        let removed = 0;
        for (const digest of keys.entries.keys()) if (!next.entries.has(digest)) removed++;
        const added = next.entries.size - (keys.entries.size - removed);
        keys = next;
        const count = keys.entries.size;
        metrics.keys.set(count);
        metrics.reloads.labels("ok").inc();
        const log = count === 0 ? logger.warn.bind(logger) : logger.info.bind(logger);
        log({ keys: count, added, removed, why }, "api keys reloaded");
      } catch (error) {
        // Keep serving with the last good set: a half-written or broken file must not lock
        // everyone out. A writer that finishes changes the file again, and it is read again.
        metrics.reloads.labels("error").inc();
        logger.error(
          { error: describeLoadError(error), why, keys: keys.entries.size },
          "api key reload failed; keeping the previous keys",
        );
      }
    };
    // Reloads run one at a time, in the order asked for.
    let queue = Promise.resolve();
    const enqueue = (step: () => Promise<void>) => {
      queue = queue.then(step, step);
      return queue;
    };
    // Polling a stat of the path, not fs.watch: stat follows symlinks, so it sees Kubernetes
    // swap a mounted Secret (..data -> a new directory), which a watch on the file misses; and
    // a stat every two seconds costs nothing. The stamp is taken before the file is read, so a
    // write that lands during the read is seen on the next round.
    const check = async () => {
      const stamp = stampOf(await stat(keysFile).catch(() => undefined));
      if (stamp === lastStamp) return;
      lastStamp = stamp;
      await load("file changed");
    };
    let timer: NodeJS.Timeout | undefined;
    const schedule = () => {
      timer = setTimeout(() => {
        void enqueue(check).then(() => {
          if (!closed) schedule();
        });
      }, options.reloadIntervalMs);
      timer.unref();
    };
    schedule();
    return {
      // Asked for (SIGHUP): read the file now, changed or not, after any reload under way.
      reload: (why) =>
        enqueue(async () => {
          lastStamp = stampOf(await stat(keysFile).catch(() => undefined));
          await load(why);
        }),
      // The challenge of every 401 (MISSING, INVALID).
      responseHeaders: ["www-authenticate"],
      // Somebody's key sent as a request id, with no key or another one in Authorization, would be
      // echoed in the answer and written to every log line of the request.
      // A digest from the key file is not a key, but it must not come out anywhere either.
      recognizesCredential: (value) =>
        keys.entries.has(hash("sha256", value, "hex")) || keys.entries.has(value.toLowerCase()),
      forOperation: () => ({
        onRequest(exchange) {
          const headers = exchange.req.headers;
          // Only the gateway says who the consumer is.
          delete headers[header];
          const authorization = headers.authorization;
          const key = authorization === undefined ? undefined : bearerCredential(authorization);
          if (key === undefined) {
            exchange.notes.authFailure = authorization === undefined ? "no header" : "not bearer";
            return MISSING;
          }
          if (key === "") {
            exchange.notes.authFailure = "empty key";
            return INVALID;
          }
          // As hex text, not a Buffer: a Buffer made by crypto is a new ArrayBuffer (a backing store
          // for the collector to track) on every request.
          const digest = hash("sha256", key, "hex");
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
          headers[header] = entry.consumer;
          if (mode === "strip") delete headers.authorization;
          else if (mode === "replace") headers.authorization = upstreamCredential;
          return undefined;
        },
      }),
      async close() {
        closed = true;
        clearTimeout(timer);
        await queue;
      },
    };
  },
});

/** The bytes of the digest being checked: one buffer, reused, as the check runs in one go. */
const presented = Buffer.alloc(DIGEST_BYTES);

/** Whether the table holds this hex digest at `at`, compared in constant time. */
function sameDigest(digests: Buffer, at: number, hex: string): boolean {
  presented.write(hex, 0, DIGEST_BYTES, "hex");
  return timingSafeEqual(digests.subarray(at, at + DIGEST_BYTES), presented);
}

function tableOf(text: string): KeyTable {
  const records = parseKeyFile(text).keys;
  const entries = new Map<string, KeyEntry>();
  const digests = Buffer.alloc(records.length * DIGEST_BYTES);
  // A consumer with several keys (rotation) keeps one copy of its name.
  const names = new Map<string, string>();
  for (const [index, key] of records.entries()) {
    const at = index * DIGEST_BYTES;
    digests.write(key.sha256, at, DIGEST_BYTES, "hex");
    let consumer = names.get(key.consumer);
    if (consumer === undefined) {
      consumer = key.consumer;
      names.set(consumer, consumer);
    }
    entries.set(key.sha256, {
      consumer,
      at,
      notAfter: key.notAfter === undefined ? undefined : Date.parse(key.notAfter),
    });
  }
  return { entries, digests };
}

function describeLoadError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  // fs errors already name the path; say what happened to it in a word.
  if (typeof code === "string") return code === "ENOENT" ? "no such file" : `cannot read it (${code})`;
  return (error as Error).message;
}

/** What changes when the file (or the target of a symlink on its path) is replaced or rewritten. */
function stampOf(info: Stats | undefined): string {
  return info === undefined ? "unreadable" : `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
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

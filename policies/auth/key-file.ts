// The API key file: JSON {"keys": [{"consumer": "...", "sha256": "<hex digest of the key>"}]}.
// It holds digests only, never keys. Shared by the auth policy, which loads it, and by
// scripts/keys.ts, which edits it, so the CLI never writes a file the gateway would refuse.
import { createHash, randomBytes } from "node:crypto";
import { parseJsonText } from "../../src/json/syntax-error.ts";
import { describeSchemaError } from "../../src/schema-error.ts";
import { compileSchema } from "../../src/schema-validator.ts";

/** A consumer's name ends up in logs, metric labels and a header: short and plain. */
export const CONSUMER_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$";
/** Generated keys start with this, so secret scanners and people recognize a leaked one. */
export const KEY_PREFIX = "pgw_";
/** How much of a digest may be shown (list, logs): enough to tell keys apart, useless to anyone else. */
export const DIGEST_PREFIX_LENGTH = 8;

export interface KeyRecord {
  consumer: string;
  sha256: string;
  /** RFC 3339 date-time after which the key is refused (for rotation with overlap). */
  notAfter?: string;
  /** More fields are welcome (the CLI writes `created`) and are kept as they are. */
  [field: string]: unknown;
}

export interface KeyFile {
  keys: KeyRecord[];
  [field: string]: unknown;
}

const SCHEMA = {
  type: "object",
  required: ["keys"],
  properties: {
    keys: {
      type: "array",
      items: {
        type: "object",
        required: ["consumer", "sha256"],
        properties: {
          consumer: { type: "string", pattern: CONSUMER_PATTERN },
          sha256: { type: "string", pattern: "^[0-9a-fA-F]{64}$" },
          notAfter: { type: "string", format: "date-time" },
        },
      },
    },
  },
};

const validate = compileSchema(SCHEMA);

/**
 * Parses and checks a key file's text. Throws an Error whose message names the place
 * ("/keys/3/sha256 must match pattern ...") and never quotes the file's content.
 * Digests come back in lower case.
 */
export function parseKeyFile(text: string): KeyFile {
  const parsed = parseJsonText(text);
  if (!validate(parsed)) {
    throw new Error(describeSchemaError(validate.errors, { field: (pointer) => pointer || "the file" }));
  }
  const file = parsed as KeyFile;
  const seen = new Map<string, number>();
  for (const [index, key] of file.keys.entries()) {
    key.sha256 = key.sha256.toLowerCase();
    const first = seen.get(key.sha256);
    // Two entries for one digest would make the consumer depend on the order of the file.
    if (first !== undefined) throw new Error(`/keys/${index}/sha256 repeats the digest of /keys/${first}`);
    seen.set(key.sha256, index);
    if (key.notAfter !== undefined && Number.isNaN(Date.parse(key.notAfter))) {
      throw new Error(`/keys/${index}/notAfter is not a date`);
    }
  }
  return file;
}

export function formatKeyFile(file: KeyFile): string {
  return `${JSON.stringify(file, null, 2)}\n`;
}

export function digestOf(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** 256 random bits, base64url, behind a recognizable prefix: a valid bearer token as it is. */
export function generateKey(): string {
  return `${KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
}

export function digestPrefix(sha256: string): string {
  return sha256.slice(0, DIGEST_PREFIX_LENGTH);
}

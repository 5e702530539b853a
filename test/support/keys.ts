// Key files as the gateway reads them: digests only, with the clear keys kept for the test.
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface ApiKey {
  readonly consumer: string;
  readonly key: string;
}

export interface KeysFile {
  readonly file: string;
  /** The clear keys, in the order of the consumers given. */
  readonly keys: ApiKey[];
  /** The first consumer's clear key: most suites call as one consumer. */
  readonly key: string;
  /** The clear key of a consumer of this file (throws for any other name). */
  keyOf(consumer: string): string;
}

/** Writes a key file holding digests only; returns its path and the clear keys for the test to use. */
export function writeKeysFile(consumers: readonly string[], directory?: string): KeysFile {
  const dir = directory ?? mkdtempSync(join(tmpdir(), "gw-keys-"));
  const keys = consumers.map((consumer) => ({
    consumer,
    key: `test_${randomBytes(24).toString("base64url")}`,
  }));
  const file = join(dir, "api-keys.json");
  writeKeysFileAt(file, keys);
  const keyOf = (consumer: string) => {
    const found = keys.find((k) => k.consumer === consumer);
    if (!found) throw new Error(`no key for ${consumer} in ${file}`);
    return found.key;
  };
  return { file, keys, key: keyOf(consumers[0] as string), keyOf };
}

export function writeKeysFileAt(file: string, keys: readonly ApiKey[]): void {
  const entries = keys.map(({ consumer, key }) => ({ consumer, sha256: sha256(key) }));
  writeFileSync(file, `${JSON.stringify({ keys: entries })}\n`);
}

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

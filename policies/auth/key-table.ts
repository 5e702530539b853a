// The loaded key file as the auth policy looks keys up in it: entries by the hex SHA-256 of the
// key, and every digest back to back in one buffer for the constant-time comparison.
import { timingSafeEqual } from "node:crypto";
import { parseKeyFile } from "./key-file.ts";

export interface KeyEntry {
  readonly consumer: string;
  /** Where the key's digest starts in its table's `digests`. */
  readonly at: number;
  readonly notAfter: number | undefined;
}

export interface KeyTable {
  /** By the hex digest. */
  readonly entries: ReadonlyMap<string, KeyEntry>;
  /**
   * Every digest, back to back: one buffer instead of a Buffer object per key, whose overhead
   * would grow the heap with every key of a large file (consumers' names are shared too).
   */
  readonly digests: Buffer;
}

export const DIGEST_BYTES = 32;

/** The bytes of the digest being checked: one buffer, reused, as the check runs in one go. */
const presented = Buffer.alloc(DIGEST_BYTES);

/** Whether the table holds this hex digest at `at`, compared in constant time. */
export function sameDigest(digests: Buffer, at: number, hex: string): boolean {
  presented.write(hex, 0, DIGEST_BYTES, "hex");
  return timingSafeEqual(digests.subarray(at, at + DIGEST_BYTES), presented);
}

export function tableOf(text: string): KeyTable {
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

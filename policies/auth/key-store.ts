// The key file, loaded and kept current (src/watched-file.ts): read once at start (fatal when it
// cannot be), then again when it changes (polled) or when a reload is asked for. A broken new
// version is logged and the previous keys are kept.
import type { Logger } from "pino";
import type { Counter, Gauge } from "prom-client";
import { ConfigError } from "../../src/startup-errors.ts";
import { describeLoadError, type WatchedFile, watchFile } from "../../src/watched-file.ts";
import { type KeyTable, tableOf } from "./key-table.ts";

/** Far beyond a million keys; a file over it is refused before it is parsed. */
export const MAX_KEY_FILE_BYTES = 256 * 1024 * 1024;

export interface KeyStore {
  /** The keys as last loaded. */
  current(): KeyTable;
  /** Reads the file now, changed or not, after the read under way, if any. */
  reload(why: string): Promise<void>;
  close(): Promise<void>;
}

export interface KeyStoreOptions {
  readonly keysFile: string;
  /** How often the file is checked for a change. */
  readonly reloadIntervalMs: number;
  readonly logger: Logger;
  readonly metrics: { readonly keys: Gauge; readonly reloads: Counter<"result"> };
  /** When a pending read counts as stuck, is logged, and polls are skipped (SLOW_READ_MS; a test sets less). */
  readonly slowReadMs?: number;
}

export function openKeyStore(options: KeyStoreOptions): KeyStore {
  const { keysFile, logger, metrics } = options;
  let watched: WatchedFile<KeyTable>;
  // The first load is synchronous and fatal: a gateway that cannot read its keys does not start.
  try {
    watched = watchFile({
      file: keysFile,
      maxBytes: MAX_KEY_FILE_BYTES,
      intervalMs: options.reloadIntervalMs,
      ...(options.slowReadMs !== undefined && { slowReadMs: options.slowReadMs }),
      parse: tableOf,
      onLoaded(next, previous, why) {
        let removed = 0;
        for (const digest of previous.entries.keys()) if (!next.entries.has(digest)) removed++;
        const added = next.entries.size - (previous.entries.size - removed);
        const count = next.entries.size;
        metrics.keys.set(count);
        metrics.reloads.labels("ok").inc();
        const log = count === 0 ? logger.warn.bind(logger) : logger.info.bind(logger);
        log({ keys: count, added, removed, why }, "api keys reloaded");
      },
      onFailed(error, why, current) {
        // Keep serving with the last good set: a half-written or broken file must not lock
        // everyone out. A writer that finishes changes the file again, and it is read again.
        metrics.reloads.labels("error").inc();
        logger.error(
          { error: describeLoadError(error), why, keys: current.entries.size },
          "api key reload failed; keeping the previous keys",
        );
      },
      onSlow: (pendingMs, why) =>
        logger.warn(
          { file: keysFile, pendingMs, why },
          "api key file read still pending (a hung mount?); polls are skipped until it returns",
        ),
      onSkipped: () => logger.debug({ file: keysFile }, "api key file poll skipped: a read is still pending"),
    });
  } catch (error) {
    throw new ConfigError(`API key file ${keysFile}: ${describeLoadError(error)}`);
  }
  metrics.keys.set(watched.current().entries.size);
  return watched;
}

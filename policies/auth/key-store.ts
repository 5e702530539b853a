// The key file, loaded and kept current: read once at start (fatal when it cannot be), then again
// when it changes (polled) or when a reload is asked for. A broken new version is logged and
// the previous keys are kept. Every read goes through src/trusted-file.ts: a FIFO, a device or a
// directory on the path is refused instead of blocking a read for ever.
import type { Stats } from "node:fs";
import type { Logger } from "pino";
import type { Counter, Gauge } from "prom-client";
import { ConfigError } from "../../src/startup-errors.ts";
import { readTrustedFile, readTrustedFileSync, SLOW_READ_MS } from "../../src/trusted-file.ts";
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
  const slowAfterMs = options.slowReadMs ?? SLOW_READ_MS;
  let keys: KeyTable;
  let lastStamp: string;
  // The first load is synchronous and fatal: a gateway that cannot read its keys does not start.
  try {
    const { text, stats } = readTrustedFileSync(keysFile, { maxBytes: MAX_KEY_FILE_BYTES, name: "the file" });
    keys = tableOf(text);
    lastStamp = stampOf(stats);
  } catch (error) {
    throw new ConfigError(`API key file ${keysFile}: ${describeLoadError(error)}`);
  }
  metrics.keys.set(keys.entries.size);
  let closed = false;

  /**
   * One read of the file: when `always`, or when its stamp differs from the last one. The stamp
   * comes from the fstat of the file opened, before its text is read, so a write that lands
   * during the read is seen on the next round.
   */
  const read = async (why: string, always: boolean) => {
    let text: string | undefined;
    let opened = false;
    try {
      const result = await readTrustedFile(keysFile, {
        maxBytes: MAX_KEY_FILE_BYTES,
        name: "the file",
        slowAfterMs,
        onSlow: (pendingMs) =>
          logger.warn(
            { file: keysFile, pendingMs, why },
            "api key file read still pending (a hung mount?); polls are skipped until it returns",
          ),
        wanted: (stats) => {
          opened = true;
          const stamp = stampOf(stats);
          const changed = stamp !== lastStamp;
          lastStamp = stamp;
          return always || changed;
        },
      });
      text = result.text;
    } catch (error) {
      if (!opened) {
        // A path that cannot be opened is reported once, not every poll, until that changes.
        const stamp = `unreadable:${(error as NodeJS.ErrnoException).code}`;
        const changed = stamp !== lastStamp;
        lastStamp = stamp;
        if (!always && !changed) return;
      }
      failed(error, why);
      return;
    }
    if (text === undefined) return;
    try {
      apply(tableOf(text), why);
    } catch (error) {
      failed(error, why);
    }
  };
  const apply = (next: KeyTable, why: string) => {
    let removed = 0;
    for (const digest of keys.entries.keys()) if (!next.entries.has(digest)) removed++;
    const added = next.entries.size - (keys.entries.size - removed);
    keys = next;
    const count = keys.entries.size;
    metrics.keys.set(count);
    metrics.reloads.labels("ok").inc();
    const log = count === 0 ? logger.warn.bind(logger) : logger.info.bind(logger);
    log({ keys: count, added, removed, why }, "api keys reloaded");
  };
  const failed = (error: unknown, why: string) => {
    // Keep serving with the last good set: a half-written or broken file must not lock
    // everyone out. A writer that finishes changes the file again, and it is read again.
    metrics.reloads.labels("error").inc();
    logger.error(
      { error: describeLoadError(error), why, keys: keys.entries.size },
      "api key reload failed; keeping the previous keys",
    );
  };

  // One read in flight at a time: a read stuck in the kernel holds a libuv thread that nothing
  // frees, and a poll that started another read every round would take the whole pool. A reload
  // asked for meanwhile waits for it, and any number of them make one more read.
  let inFlight: Promise<void> | undefined;
  let followUp: Promise<void> | undefined;
  const start = (why: string, always: boolean): Promise<void> => {
    inFlight = read(why, always).finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  const reload = (why: string): Promise<void> => {
    if (inFlight === undefined) return start(why, true);
    followUp ??= inFlight.then(() => {
      followUp = undefined;
      return start(why, true);
    });
    return followUp;
  };
  // Polling the file, not fs.watch: opening the path follows symlinks, so it sees Kubernetes
  // swap a mounted Secret (..data -> a new directory), which a watch on the file misses; and
  // an open and an fstat every two seconds cost nothing.
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    timer = setTimeout(() => {
      // A read still pending (stuck, or a reload) is not joined by another one: skip this round.
      if (inFlight === undefined && followUp === undefined) void start("file changed", false);
      else logger.debug({ file: keysFile }, "api key file poll skipped: a read is still pending");
      if (!closed) schedule();
    }, options.reloadIntervalMs);
    timer.unref();
  };
  schedule();
  return {
    current: () => keys,
    reload,
    async close() {
      closed = true;
      clearTimeout(timer);
      // A read under way finishes first, unless it is stuck: closing must not wait on a hung mount.
      const pending = followUp ?? inFlight;
      if (pending === undefined) return;
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([pending, new Promise((resolve) => (bound = setTimeout(resolve, slowAfterMs)))]);
      clearTimeout(bound);
    },
  };
}

function describeLoadError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  // fs errors already name the path; say what happened to it in a word.
  if (typeof code === "string") return code === "ENOENT" ? "no such file" : `cannot read it (${code})`;
  return (error as Error).message;
}

/** What changes when the file (or the target of a symlink on its path) is replaced or rewritten. */
function stampOf(info: Stats): string {
  return `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
}

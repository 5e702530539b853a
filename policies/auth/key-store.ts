// The key file, loaded and kept current: read once at start (fatal when it cannot be), then again
// when its stat changes (polled) or when a reload is asked for. A broken new version is logged and
// the previous keys are kept.
import { readFileSync, type Stats, statSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import type { Logger } from "pino";
import type { Counter, Gauge } from "prom-client";
import { ConfigError } from "../../src/startup-errors.ts";
import { type KeyTable, tableOf } from "./key-table.ts";

export interface KeyStore {
  /** The keys as last loaded. */
  current(): KeyTable;
  /** Reads the file now, changed or not, after any reload under way. */
  reload(why: string): Promise<void>;
  close(): Promise<void>;
}

export interface KeyStoreOptions {
  readonly keysFile: string;
  /** How often the file's stat is checked for a change. */
  readonly reloadIntervalMs: number;
  readonly logger: Logger;
  readonly metrics: { readonly keys: Gauge; readonly reloads: Counter<"result"> };
}

export function openKeyStore(options: KeyStoreOptions): KeyStore {
  const { keysFile, logger, metrics } = options;
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
    current: () => keys,
    reload: (why) =>
      enqueue(async () => {
        lastStamp = stampOf(await stat(keysFile).catch(() => undefined));
        await load(why);
      }),
    async close() {
      closed = true;
      clearTimeout(timer);
      await queue;
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
function stampOf(info: Stats | undefined): string {
  return info === undefined ? "unreadable" : `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
}

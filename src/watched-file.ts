// A trusted file the gateway reads at start and keeps current: the API key file, the ops token.
// Read once at start (the caller makes a failure fatal), then again when it changes (polled) or
// when a reload is asked for (SIGHUP). A broken new version is reported and the previous value
// kept. Every read goes through src/trusted-file.ts: a FIFO, a device or a directory on the path
// is refused instead of blocking a read for ever.
import type { Stats } from "node:fs";
import { oneAtATime } from "./one-at-a-time.ts";
import { readTrustedFile, readTrustedFileSync, SLOW_READ_MS } from "./trusted-file.ts";

export interface WatchedFile<T> {
  /** The value as last loaded. */
  current(): T;
  /** Reads the file now, changed or not, after the read under way, if any. */
  reload(why: string): Promise<void>;
  close(): Promise<void>;
}

export interface WatchedFileOptions<T> {
  readonly file: string;
  /** A larger file is refused before it is parsed. */
  readonly maxBytes: number;
  /** How often the file is checked for a change. */
  readonly intervalMs: number;
  /** When a pending read counts as stuck (SLOW_READ_MS; a test sets less). */
  readonly slowReadMs?: number;
  /** The file's text as a value; throws when the text is not one (its message says why). */
  parse(text: string): T;
  /** A new value replaced `previous`. */
  onLoaded(value: T, previous: T, why: string): void;
  /** A read or parse failed: `current` is kept. The error is the reader's or parse's own. */
  onFailed(error: unknown, why: string, current: T): void;
  /** A read pending past slowReadMs (a hung mount?): polls are skipped until it returns. */
  onSlow(pendingMs: number, why: string): void;
  /** A poll skipped because a read is still pending. */
  onSkipped?(): void;
}

/** Reads the file now (throwing what the read or parse throws), then keeps it current. */
export function watchFile<T>(options: WatchedFileOptions<T>): WatchedFile<T> {
  const { file, maxBytes } = options;
  const slowAfterMs = options.slowReadMs ?? SLOW_READ_MS;
  const first = readTrustedFileSync(file, { maxBytes, name: "the file" });
  let value = options.parse(first.text);
  let lastStamp = stampOf(first.stats);
  /** The stamp of the last file found unlinked when opened (skipped once: see wanted below). */
  let unlinkedStamp: string | undefined;
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
      const result = await readTrustedFile(file, {
        maxBytes,
        name: "the file",
        slowAfterMs,
        onSlow: (pendingMs) => options.onSlow(pendingMs, why),
        wanted: (stats) => {
          opened = true;
          const stamp = stampOf(stats);
          // Renamed over (how a careful writer replaces a file) between this read's open and its
          // fstat: the unlink moved its ctime, so its stamp would look new. The path leads to the
          // new file now, which the next round reads; this one was read when it was current.
          // Once per stamp: a file system that says 0 links of a live file (some FUSE and network
          // mounts do) is read one round later, never skipped for good.
          if (stats.nlink === 0 && stamp !== unlinkedStamp) {
            unlinkedStamp = stamp;
            return false;
          }
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
      options.onFailed(error, why, value);
      return;
    }
    if (text === undefined) return;
    let next: T;
    try {
      next = options.parse(text);
    } catch (error) {
      options.onFailed(error, why, value);
      return;
    }
    const previous = value;
    value = next;
    options.onLoaded(next, previous, why);
  };

  // One read in flight at a time: a read stuck in the kernel holds a libuv thread that nothing
  // frees, and a poll that started another read every round would take the whole pool. A reload
  // asked for meanwhile waits for it, and any number of them make one more read.
  const reads = oneAtATime(read);
  const reload = (why: string): Promise<void> => reads.call(why, true);
  // Polling the file, not fs.watch: opening the path follows symlinks, so it sees Kubernetes
  // swap a mounted Secret (..data -> a new directory), which a watch on the file misses; and
  // an open and an fstat every two seconds cost nothing.
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    timer = setTimeout(() => {
      // A read still pending (stuck, or a reload) is not joined by another one: skip this round.
      if (!reads.busy) void reads.call("file changed", false);
      else options.onSkipped?.();
      if (!closed) schedule();
    }, options.intervalMs);
    timer.unref();
  };
  schedule();
  return {
    current: () => value,
    reload,
    async close() {
      closed = true;
      clearTimeout(timer);
      // A read under way finishes first, unless it is stuck: closing must not wait on a hung mount.
      const pending = reads.pending;
      if (pending === undefined) return;
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([pending, new Promise((resolve) => (bound = setTimeout(resolve, slowAfterMs)))]);
      clearTimeout(bound);
    },
  };
}

/** Why a file could not be loaded, in a few words: fs errors already name the path. */
export function describeLoadError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === "string") return code === "ENOENT" ? "no such file" : `cannot read it (${code})`;
  return (error as Error).message;
}

/** What changes when the file (or the target of a symlink on its path) is replaced or rewritten. */
function stampOf(info: Stats): string {
  return `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
}

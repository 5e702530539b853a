// Noticing that the document changed: a watch on the folder of every path the document was read
// through (the configured file, each $ref'd file, and where each symlink led), debounced. A
// watch on the file itself would miss a Kubernetes ConfigMap update, where the kubelet writes a
// new folder and swaps the `..data` symlink in the mounted folder (the files' own paths never
// change), and would miss an editor that saves by renaming a new file over the old one. What
// fires is only a hint: the files are read and hashed, and an unchanged hash changes nothing.
import { type FSWatcher, watch } from "node:fs";
import { dirname } from "node:path";
import type { Logger } from "./logger.ts";

export interface DocumentWatch {
  /** Watches the folders of these paths from now on (and no others): after each read of the files. */
  watch(paths: readonly string[]): void;
  close(): void;
}

export interface DocumentWatchOptions {
  /** Quiet time after the last event before `onChange` (a writer finishing, the kubelet's several renames). */
  readonly debounceMs: number;
  readonly onChange: (why: string) => void;
  readonly logger: Logger;
}

export function watchDocumentFiles(options: DocumentWatchOptions): DocumentWatch {
  const watchers = new Map<string, FSWatcher>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const changed = () => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => options.onChange("file changed"), options.debounceMs);
    timer.unref();
  };
  const stop = (folder: string) => {
    watchers.get(folder)?.close();
    watchers.delete(folder);
  };
  return {
    watch(paths) {
      if (closed) return;
      const folders = new Set(paths.map((path) => dirname(path)));
      for (const folder of watchers.keys()) if (!folders.has(folder)) stop(folder);
      for (const folder of folders) {
        if (watchers.has(folder)) continue;
        try {
          // Not persistent: a watch never keeps a process alive that is shutting down.
          const watcher = watch(folder, { persistent: false }, changed);
          // A folder removed (the kubelet deletes the previous version's): that watch ends; the
          // next read of the files says what to watch.
          watcher.on("error", () => {
            stop(folder);
            changed();
          });
          watchers.set(folder, watcher);
        } catch (error) {
          options.logger.warn(
            { folder, error: (error as Error).message },
            "cannot watch the document's folder; it reloads on SIGHUP only",
          );
        }
      }
    },
    close() {
      closed = true;
      clearTimeout(timer);
      for (const folder of [...watchers.keys()]) stop(folder);
    },
  };
}

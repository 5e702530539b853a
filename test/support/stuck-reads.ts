// Reads that hang in the kernel, as on a hung NFS or FUSE mount, made on loopback: opening a FIFO
// for reading, without O_NONBLOCK, waits in open(2) until a writer comes, and holds a thread of
// libuv's pool all that time, as a stuck read of a regular file would. Filling the pool so makes
// every later file operation of the process wait its turn, for as long as the test says.
import { execFileSync } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** libuv's pool: UV_THREADPOOL_SIZE, 4 unless set. */
const POOL_SIZE = Number(process.env.UV_THREADPOOL_SIZE) || 4;

export function makeFifo(path: string): void {
  execFileSync("mkfifo", [path]);
}

/** Holds every thread of libuv's pool in open(2) until `release()`. */
export async function stallThreadPool(): Promise<{ release(): Promise<void> }> {
  const folder = mkdtempSync(join(tmpdir(), "gw-stuck-"));
  const fifos = Array.from({ length: POOL_SIZE }, (_, index) => join(folder, `fifo-${index}`));
  for (const fifo of fifos) makeFifo(fifo);
  const readers = fifos.map((fifo) => open(fifo, "r"));
  return {
    async release() {
      // A writer lets each reader's open return. It is opened here, on this thread, without
      // blocking: the pool it would otherwise need is the one held. ENXIO: that reader's open has
      // not started yet.
      const writers: number[] = [];
      for (const fifo of fifos) {
        for (let tries = 0; ; tries++) {
          try {
            writers.push(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
            break;
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== "ENXIO" || tries > 500) throw error;
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        }
      }
      for (const reader of await Promise.all(readers)) await reader.close();
      for (const writer of writers) closeSync(writer);
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

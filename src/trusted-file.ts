// Reading a file the gateway trusts only so far: the config, the OpenAPI document and the files
// its $refs name, the API key file. The operator names them, but a path can lead to a FIFO that
// nobody writes, a device, or a mount that hangs, and a read that never returns used to wedge key
// reloads for good (a revoked key kept working) and hang start-up. So every such file is opened
// without blocking (O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer),
// refused unless fstat says it is a regular file, and read to a size bound. Symbolic links are
// followed (a Kubernetes Secret is one): what counts is the file the path leads to.
//
// A regular file on a hung network or FUSE mount still blocks a read, and no timeout frees the
// libuv thread that waits on it. What the gateway can do is know about it: every read here is
// counted while it is pending, a caller is told when one passes `slowAfterMs`, and the key store
// keeps one read in flight per file (policies/auth/key-store.ts). Start-up reads are synchronous
// (createGateway() is, and a policy's create), so a read hung there hangs start-up; and Node cannot
// exit while a thread of its pool is stuck in a syscall either (process.exit joins the pool).
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";

/** Non-blocking, so that opening a FIFO or a device cannot wait; it changes nothing for a regular file. */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;
const CHUNK_BYTES = 64 * 1024;
/** A read pending this long is stuck, not slow (a hung network or FUSE mount): a poller's default. */
export const SLOW_READ_MS = 5000;

export interface TrustedFileOptions {
  /** The bound: a larger file (or one that grows past it while read) is refused. */
  readonly maxBytes: number;
  /** How a message calls the file ("the file", a $ref's relative path); its path when absent. */
  readonly name?: string;
}

export interface TrustedFileText {
  readonly text: string;
  /** The opened file's fstat: what it was when it was read (a caller's change stamp). */
  readonly stats: Stats;
}

/** Why a file is refused: it is not a regular file, or it is over its bound. Its message names the file. */
export class TrustedFileError extends Error {
  override name = "TrustedFileError";
}

/** The file's text, read at once: for start-up, which has nothing else to do meanwhile. */
export function readTrustedFileSync(file: string, options: TrustedFileOptions): TrustedFileText {
  const name = options.name ?? file;
  const fd = openSync(file, OPEN_FLAGS);
  try {
    const stats = fstatSync(fd);
    checkFile(stats, name, options.maxBytes);
    // Read in chunks to the bound, whatever the size said: a file that grows stops there too.
    const chunks: Buffer[] = [];
    let length = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      chunks.push(chunk.subarray(0, read));
      length += read;
      if (length > options.maxBytes) throw new TrustedFileError(tooLarge(name, options.maxBytes, length));
    }
    return { text: Buffer.concat(chunks, length).toString("utf8"), stats };
  } finally {
    closeSync(fd);
  }
}

export interface TrustedReadOptions extends TrustedFileOptions {
  /**
   * Read the text only when this says so of the opened file's fstat (a poll that finds the file
   * unchanged reads nothing); always when absent.
   */
  readonly wanted?: (stats: Stats) => boolean;
  /** After this long pending, the read counts as slow (slowFileReads) and onSlow is called once. */
  readonly slowAfterMs: number;
  readonly onSlow?: (pendingMs: number) => void;
}

/** The file's text, read on libuv's thread pool; undefined when `wanted` declined it. */
export async function readTrustedFile(
  file: string,
  options: TrustedReadOptions,
): Promise<TrustedFileText | { readonly text: undefined; readonly stats: Stats }> {
  const started = performance.now();
  let slow = false;
  const timer = setTimeout(() => {
    slow = true;
    slowReads++;
    options.onSlow?.(Math.round(performance.now() - started));
  }, options.slowAfterMs);
  timer.unref();
  try {
    return await readOnce(file, options);
  } finally {
    clearTimeout(timer);
    if (slow) slowReads--;
  }
}

let slowReads = 0;

/** Reads of trusted files pending longer than their slowAfterMs, now, in this process (a gauge). */
export function slowFileReads(): number {
  return slowReads;
}

async function readOnce(
  file: string,
  options: TrustedReadOptions,
): Promise<TrustedFileText | { readonly text: undefined; readonly stats: Stats }> {
  const name = options.name ?? file;
  let handle: FileHandle | undefined;
  try {
    handle = await open(file, OPEN_FLAGS);
    const stats = await handle.stat();
    // Asked first: a poll that finds a refused file unchanged says nothing again.
    if (options.wanted && !options.wanted(stats)) return { text: undefined, stats };
    checkFile(stats, name, options.maxBytes);
    const chunks: Buffer[] = [];
    let length = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      length += bytesRead;
      if (length > options.maxBytes) throw new TrustedFileError(tooLarge(name, options.maxBytes, length));
    }
    return { text: Buffer.concat(chunks, length).toString("utf8"), stats };
  } finally {
    await handle?.close();
  }
}

/** Refuses anything but a regular file, and a regular file over the bound before a byte is read. */
function checkFile(stats: Stats, name: string, maxBytes: number): void {
  if (!stats.isFile()) {
    throw new TrustedFileError(
      `${name} is ${kindOf(stats)}, not a regular file: the gateway reads only regular files, which cannot block it`,
    );
  }
  if (stats.size > maxBytes) throw new TrustedFileError(tooLarge(name, maxBytes, stats.size));
}

function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return "a directory";
  if (stats.isFIFO()) return "a FIFO (named pipe)";
  if (stats.isCharacterDevice()) return "a character device";
  if (stats.isBlockDevice()) return "a block device";
  if (stats.isSocket()) return "a socket";
  return "not a file";
}

function tooLarge(name: string, maxBytes: number, bytes: number): string {
  return `${name} is larger than ${formatBytes(maxBytes)} (${bytes} bytes): it is refused before it is parsed`;
}

function formatBytes(bytes: number): string {
  const mb = bytes / 1024 / 1024;
  return Number.isInteger(mb) ? `${mb} MB` : `${bytes} bytes`;
}

// The gateway's own log lines read back (the fleet-wide reports read every replica's logs): a
// collector may put a prefix before the JSON, and other lines, broken lines and other messages
// are skipped. Lines are read with a bound on each (LogLineReader): a log is what others wrote.
import { read } from "node:fs";
import { open } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";

/** The line's JSON object when it is a line with this `msg`; undefined for anything else. */
export function logEntry(line: string, msg: string): Record<string, unknown> | undefined {
  const start = line.indexOf("{");
  // Most lines are other messages: skipped before parsing.
  if (start === -1 || !line.includes(msg)) return undefined;
  let entry: unknown;
  try {
    entry = JSON.parse(line.slice(start));
  } catch {
    return undefined;
  }
  const object = entry as Record<string, unknown> | null;
  return object !== null && typeof object === "object" && object.msg === msg ? object : undefined;
}

/**
 * The bytes of a log file, or of stdin for "-", a chunk at a time into one buffer reused: a
 * chunk is good until the next is asked for (LogLineReader copies what it keeps). A stream
 * allocates each chunk anew, and the 50 MB of one long line dropped as it came still raised the
 * peak RSS by about 40 MB, garbage the collector had not yet reached.
 */
export async function* logChunks(source: string): AsyncGenerator<Buffer> {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  const handle = source === "-" ? undefined : await open(source, "r");
  try {
    for (;;) {
      const bytes = handle === undefined ? await readStdin(buffer) : (await handle.read(buffer)).bytesRead;
      if (bytes === 0) return;
      yield buffer.subarray(0, bytes);
    }
  } finally {
    await handle?.close();
  }
}

const CHUNK_BYTES = 64 * 1024;
/** How long to wait for stdin when it was left non-blocking (a parent's pipe) and had nothing yet. */
const STDIN_RETRY_MS = 10;

/** One read of stdin's file descriptor, as a file's (process.stdin would be a stream). */
async function readStdin(buffer: Buffer): Promise<number> {
  for (;;) {
    try {
      return await new Promise<number>((resolve, reject) =>
        read(0, buffer, 0, buffer.length, null, (error, bytes) => (error ? reject(error) : resolve(bytes))),
      );
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
      await sleep(STDIN_RETRY_MS);
    }
  }
}

/**
 * The longest log line read back. The gateway's own lines are far shorter (an access line is a
 * few hundred bytes, a usage line a few kilobytes); a longer one is not the gateway's, or is cut.
 */
export const MAX_LOG_LINE_BYTES = 64 * 1024;

/** "2 lines longer than 64 KiB skipped": what a command says of the lines it did not read. */
export function skippedLinesText(skipped: number, maxBytes = MAX_LOG_LINE_BYTES): string {
  return `${skipped.toLocaleString("en-US")} ${skipped === 1 ? "line" : "lines"} longer than ${maxBytes / 1024} KiB skipped`;
}

/**
 * A log's lines, read chunk by chunk, with a bound on what one line holds: a line longer than
 * `maxBytes` is skipped and counted (`skipped`), its bytes dropped as they arrive up to the next
 * newline, so a log of one endless line (2 GB without a newline) costs no more memory than a
 * short one. readline, which this replaces, held such a line whole. A line ends at "\n", "\r\n"
 * too; the last one may lack it.
 */
export class LogLineReader {
  readonly #maxBytes: number;
  #skipped = 0;

  constructor(maxBytes = MAX_LOG_LINE_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /** Lines skipped as too long, over every input read. */
  get skipped(): number {
    return this.#skipped;
  }

  async *lines(input: AsyncIterable<Buffer | string> | Iterable<Buffer | string>): AsyncGenerator<string> {
    // The start of a line that goes on in the next chunk: copies, at most maxBytes of them.
    let held: Buffer[] = [];
    let heldBytes = 0;
    let dropping = false;
    for await (const piece of input) {
      const chunk = typeof piece === "string" ? Buffer.from(piece, "utf8") : piece;
      let start = 0;
      while (start < chunk.length) {
        const end = chunk.indexOf(NEWLINE, start);
        const stop = end === -1 ? chunk.length : end;
        if (!dropping) {
          if (heldBytes + (stop - start) > this.#maxBytes) {
            this.#skipped++;
            held = [];
            heldBytes = 0;
            dropping = true;
          } else if (end === -1) {
            held.push(Buffer.copyBytesFrom(chunk, start));
            heldBytes += stop - start;
          } else {
            yield lineOf(held, chunk.subarray(start, end));
            held = [];
            heldBytes = 0;
          }
        }
        if (end === -1) break;
        // A newline ends whatever was dropped.
        dropping = false;
        start = end + 1;
      }
    }
    if (!dropping && heldBytes > 0) yield lineOf(held, EMPTY);
  }
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const EMPTY = Buffer.alloc(0);

/** Decoded whole, so that a character split between two chunks reads as itself. */
function lineOf(held: readonly Buffer[], last: Buffer): string {
  const bytes = held.length === 0 ? last : Buffer.concat([...held, last]);
  const end = bytes.at(-1) === CARRIAGE_RETURN ? bytes.length - 1 : bytes.length;
  return bytes.toString("utf8", 0, end);
}

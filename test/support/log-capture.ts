// A pino destination that keeps every line, parsed, as it was written: for a gateway in the
// test's own process and for a policy under the harness alike.
import { Writable } from "node:stream";

/** The pino lines, parsed, as they were written. */
export class LogCapture extends Writable {
  readonly lines: Record<string, unknown>[] = [];
  readonly raw: string[] = [];
  #partial = "";
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    const text = this.#partial + chunk.toString("utf8");
    const parts = text.split("\n");
    this.#partial = parts.pop() ?? "";
    for (const part of parts) {
      if (part === "") continue;
      this.raw.push(part);
      this.lines.push(JSON.parse(part) as Record<string, unknown>);
    }
    done();
  }
  /** Lines with the given msg. */
  messages(msg: string): Record<string, unknown>[] {
    return this.lines.filter((line) => line.msg === msg);
  }
}

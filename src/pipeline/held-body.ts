// An answer the gateway holds whole to judge it, kept as the chunks the backend's socket gave,
// never joined into one Buffer: joining copies every answer once more, and leaves the allocator
// 1 MB blocks among 64 KB chunks, on which it fragments. Policies read it as text (what
// JSON.parse needs anyway); the client gets the chunks in one writev (Node corks the socket for
// the rest of the tick on a response's first write).
import type { ServerResponse } from "node:http";
import { StringDecoder } from "node:string_decoder";
import type { AnswerBody } from "../policy.ts";
import { freeBufferMemory } from "./buffer-memory.ts";

export class HeldBody implements AnswerBody {
  readonly length: number;
  private readonly chunks: Buffer[];

  /** Takes the chunks: the array is the body's from now on. */
  constructor(chunks: Buffer[], length: number) {
    this.chunks = chunks;
    this.length = length;
  }

  text(): string {
    const { chunks } = this;
    if (chunks.length === 1) return (chunks[0] as Buffer).toString("utf8");
    // A character may be split between two chunks.
    const decoder = new StringDecoder("utf8");
    let text = "";
    for (const chunk of chunks) text += decoder.write(chunk);
    return text + decoder.end();
  }

  /** One Buffer of the whole body (to decompress it); the chunks are freed. */
  join(): Buffer {
    const { chunks } = this;
    if (chunks.length === 1) return chunks.pop() as Buffer;
    const whole = Buffer.concat(chunks, this.length);
    this.free();
    return whole;
  }

  /** The body, as the rest and the end of a response whose head is written. */
  endResponse(res: ServerResponse): void {
    const { chunks } = this;
    const last = chunks.length - 1;
    for (let index = 0; index < last; index++) res.write(chunks[index]);
    res.end(chunks[last]);
  }

  /**
   * Frees the chunks' memory now (buffer-memory.ts). Only once nothing reads them again: the
   * body refused, joined, or its response finished.
   */
  free(): void {
    for (const chunk of this.chunks) freeBufferMemory(chunk);
    this.chunks.length = 0;
  }
}

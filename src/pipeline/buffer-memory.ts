// The memory of a body the gateway held goes back the moment the gateway is done with it, not
// when V8 next collects. A Buffer's bytes live outside V8's heap, and V8 frees those of an old
// object only in a full collection, which external memory alone starts once it has grown by
// 64 MB since the last one: as much again as server.maxBufferedBytes lets answers hold. A client
// that does not read keeps its answers long enough to be old, so without this the answers
// already sent piled up beside the ones still held (bench/results/2026-11-25-freed-answers.md).
//
// Only for a Buffer nothing else can still read: the chunks of an answer once joined, an answer
// the gateway refused, one whose response has finished (every byte handed to the kernel, so no
// write of it is pending in libuv), or a streamed chunk whose write has completed. undici's parser
// hands out each piece of a body as a view of what the socket read (Node gives each read an
// ArrayBuffer of its own): a piece owns its ArrayBuffer only when it is the whole of one read, and
// the check below leaves every other view to the collector. undici also hands out empty pieces
// of its one shared empty Buffer, which it parses again later: an empty Buffer is never detached
// (test/unit/pipeline/held-body.test.ts). That is how undici and Node 24 work, not a documented
// promise; test/slow/hardening-send.test.ts fails if freeing takes memory from under undici
// ("Cannot perform %TypedArray%.prototype.set on a detached ArrayBuffer").

/**
 * Detaches the Buffer's ArrayBuffer (ES2024 `transfer`), which frees its bytes at once; the
 * Buffer reads as empty afterwards. A Buffer sharing its ArrayBuffer (a slice, or one from
 * Node's pool of small buffers) is left to the collector, and an empty one has nothing to free.
 */
export function freeBufferMemory(buffer: Buffer): void {
  const memory = buffer.buffer;
  if (
    buffer.length === 0 ||
    buffer.byteOffset !== 0 ||
    memory.byteLength !== buffer.length ||
    !(memory instanceof ArrayBuffer)
  ) {
    return;
  }
  if (memory.detached) return;
  try {
    memory.transfer(0);
  } catch {
    // An ArrayBuffer its maker pinned (Node may make some non-detachable): the collector's, then.
  }
}

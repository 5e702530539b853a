// The private parts of Node's HTTP server the gateway relies on, in one place: none is a public
// API, each is how Node's own net and http modules work, and test/unit/node-internals.test.ts
// fails the day a Node release stops providing one. Nothing else in the gateway reaches past
// Node's public surface.
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";

interface StreamHandle {
  readStop(): number;
  readStart(): number;
}

/**
 * The libuv stream under a socket. Node's HTTP server reads it in C++ (the parser consumes the
 * handle), where socket.pause() does not reach: only the handle can stop the reading. Undefined
 * once the socket is closed, or if Node ever stops exposing it (reading then goes on unstopped).
 */
function streamHandle(socket: Socket): StreamHandle | undefined {
  const handle = (socket as unknown as { _handle?: Partial<StreamHandle> | null })._handle;
  return typeof handle?.readStop === "function" && typeof handle.readStart === "function"
    ? (handle as StreamHandle)
    : undefined;
}

/**
 * Stops reading the socket at its handle. The socket's own reading flag is left as it is, so
 * that Node does not start it again behind the caller's back.
 */
export function stopReadingSocket(socket: Socket): void {
  streamHandle(socket)?.readStop();
}

/** Reads the socket again after stopReadingSocket. */
export function resumeReadingSocket(socket: Socket): void {
  streamHandle(socket)?.readStart();
}

/**
 * The answer Node's HTTP server is writing (or about to write) on a connection: the one whose
 * request a 'clientError' interrupted. Undefined when none is pending.
 */
export function pendingResponse(socket: Socket): ServerResponse | undefined {
  return (socket as { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

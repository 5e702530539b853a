// Connections the gateway has decided to close. Once an answer carries Connection: close (a
// framing error, an oversized body, HTTP/1.0, draining), whatever else the client pipelined on
// that connection is neither judged nor forwarded, and no second answer is written after it.
import type { Socket } from "node:net";

const CLOSING = Symbol("closing");
type Marked = Socket & { [CLOSING]?: true };

export function markClosing(socket: Socket): void {
  (socket as Marked)[CLOSING] = true;
}

export function isClosing(socket: Socket): boolean {
  return (socket as Marked)[CLOSING] === true;
}

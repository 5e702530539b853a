// What the gateway holds about a client connection: whether it is closing, and how many of its
// requests are in flight.
//
// Connections the gateway has decided to close. Once an answer carries Connection: close (a
// framing error, an oversized body, HTTP/1.0, draining), whatever else the client pipelined on
// that connection is neither judged nor forwarded, and no second answer is written after it.
import type { Socket } from "node:net";
import { resumeReadingSocket, stopReadingSocket } from "../node-internals.ts";

const CLOSING = Symbol("closing");
type Marked = Socket & { [CLOSING]?: true };

export function markClosing(socket: Socket): void {
  (socket as Marked)[CLOSING] = true;
}

export function isClosing(socket: Socket): boolean {
  return (socket as Marked)[CLOSING] === true;
}

// Requests a client pipelines on one connection. Node parses whatever arrives and starts each
// request at once; it stops reading only when answers pile up unsent, and a proxy's answers wait
// on the backend: unbounded, one client pipelining on one connection holds as much of the
// gateway's memory as it likes. So a connection has at most PIPELINE_DEPTH requests in flight,
// and no further request of it starts while more than maxQueuedAnswerBytes of its answers are
// held by the gateway and not yet handed to the kernel (a client that does not read). Then it is
// no longer read (the client's TCP window fills), and what one read had already brought waits its
// turn, judged and forwarded as earlier answers go out, as nginx serves a connection's requests
// one after another. Nothing is refused: a client is only slowed down.
export const PIPELINE_DEPTH = 32;
const IN_FLIGHT = Symbol("requests in flight");
const WAITING = Symbol("requests waiting their turn");
const STOPPED = Symbol("not read for pipelining");
const QUEUED = Symbol("answer bytes held");
type Counted = Socket & {
  [IN_FLIGHT]?: number;
  [WAITING]?: (() => void)[];
  [STOPPED]?: boolean;
  [QUEUED]?: number;
};

/** Counts a request in when its connection has room; false when it must wait its turn (waitTurn). */
export function admitRequest(socket: Socket, maxQueuedAnswerBytes: number): boolean {
  const counted = socket as Counted;
  const inFlight = counted[IN_FLIGHT] ?? 0;
  if (
    inFlight >= PIPELINE_DEPTH ||
    (counted[WAITING]?.length ?? 0) > 0 ||
    (counted[QUEUED] ?? 0) > maxQueuedAnswerBytes
  ) {
    return false;
  }
  counted[IN_FLIGHT] = inFlight + 1;
  if (inFlight + 1 === PIPELINE_DEPTH) stopReading(counted);
  return true;
}

/** A request admitRequest turned away: `start` runs, counted in, once there is room. */
export function waitTurn(socket: Socket, start: () => void): void {
  const counted = socket as Counted;
  stopReading(counted);
  const waiting = counted[WAITING] ?? [];
  counted[WAITING] = waiting;
  waiting.push(start);
}

/** Counts a request's answer out (sent, or the connection gone), and lets the next one start. */
export function requestEnded(socket: Socket, maxQueuedAnswerBytes: number): void {
  const counted = socket as Counted;
  counted[IN_FLIGHT] = (counted[IN_FLIGHT] ?? 1) - 1;
  startWhatFits(counted, maxQueuedAnswerBytes);
}

/** Bytes of an answer on this connection the gateway holds (released with releaseAnswerBytes). */
export function holdAnswerBytes(socket: Socket, bytes: number): void {
  const counted = socket as Counted;
  counted[QUEUED] = (counted[QUEUED] ?? 0) + bytes;
}

/** Held answer bytes handed to the kernel (or dropped): a waiting request may start. */
export function releaseAnswerBytes(socket: Socket, bytes: number, maxQueuedAnswerBytes: number): void {
  const counted = socket as Counted;
  counted[QUEUED] = (counted[QUEUED] ?? bytes) - bytes;
  startWhatFits(counted, maxQueuedAnswerBytes);
}

function startWhatFits(counted: Counted, maxQueuedAnswerBytes: number): void {
  const waiting = counted[WAITING];
  if (counted.destroyed) {
    // Nobody is left to answer what else waited: it is dropped, not forwarded.
    waiting?.splice(0);
    return;
  }
  const inFlight = counted[IN_FLIGHT] ?? 0;
  const room = inFlight < PIPELINE_DEPTH && (counted[QUEUED] ?? 0) <= maxQueuedAnswerBytes;
  if (!room) return;
  const next = waiting?.shift();
  if (next) {
    // It counts in and runs now; the next one waits for the next answer to go out.
    counted[IN_FLIGHT] = inFlight + 1;
    next();
    return;
  }
  if (counted[STOPPED] === true) {
    counted[STOPPED] = false;
    resumeReadingSocket(counted);
  }
}

function stopReading(counted: Counted): void {
  if (counted[STOPPED] === true) return;
  counted[STOPPED] = true;
  // Node's HTTP server reads the socket in C++, where socket.pause() does not reach.
  stopReadingSocket(counted);
}

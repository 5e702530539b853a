// What the gateway holds about a client connection: whether it is closing, and how many of its
// requests are in flight.
//
// Connections the gateway has decided to close. Once an answer carries Connection: close (a
// framing error, an oversized body, HTTP/1.0, draining), whatever else the client pipelined on
// that connection is neither judged nor forwarded, and no second answer is written after it.
import type { IncomingMessage, ServerResponse } from "node:http";
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
/** A connection's pipelining state: one object, so that every connection has the same shape. */
interface Pipelining {
  /** Requests started and not yet answered. */
  inFlight: number;
  /** Requests waiting their turn, in order. */
  readonly waiting: (() => void)[];
  /** The socket is not read (the pipeline is full, or answers are held). */
  stopped: boolean;
  /** Bytes of the connection's answers the gateway holds. */
  queued: number;
}
// One property added to Node's socket, at its first request. Properties added one at a time,
// and only to some sockets, give sockets many hidden classes, and Node's own socket and stream
// code then looks their properties up megamorphically on every write.
const PIPELINING = Symbol("pipelining");
type Counted = Socket & { [PIPELINING]?: Pipelining };

function pipelining(socket: Socket): Pipelining {
  const counted = socket as Counted;
  let state = counted[PIPELINING];
  if (state === undefined) {
    state = { inFlight: 0, waiting: [], stopped: false, queued: 0 };
    counted[PIPELINING] = state;
  }
  return state;
}

/** Counts a request in when its connection has room; false when it must wait its turn (waitTurn). */
export function admitRequest(socket: Socket, maxQueuedAnswerBytes: number): boolean {
  const state = pipelining(socket);
  if (state.inFlight >= PIPELINE_DEPTH || state.waiting.length > 0 || state.queued > maxQueuedAnswerBytes) {
    return false;
  }
  state.inFlight++;
  if (state.inFlight === PIPELINE_DEPTH) stopReading(socket, state);
  return true;
}

/** A request admitRequest turned away: `start` runs, counted in, once there is room. */
export function waitTurn(socket: Socket, start: () => void): void {
  const state = pipelining(socket);
  stopReading(socket, state);
  state.waiting.push(start);
}

/** Counts a request's answer out (sent, or the connection gone), and lets the next one start. */
export function requestEnded(socket: Socket, maxQueuedAnswerBytes: number): void {
  const state = pipelining(socket);
  state.inFlight--;
  startWhatFits(socket, state, maxQueuedAnswerBytes);
}

/** Bytes of an answer on this connection the gateway holds (released with releaseAnswerBytes). */
export function holdAnswerBytes(socket: Socket, bytes: number): void {
  pipelining(socket).queued += bytes;
}

/** Held answer bytes handed to the kernel (or dropped): a waiting request may start. */
export function releaseAnswerBytes(socket: Socket, bytes: number, maxQueuedAnswerBytes: number): void {
  const state = pipelining(socket);
  state.queued -= bytes;
  startWhatFits(socket, state, maxQueuedAnswerBytes);
}

function startWhatFits(socket: Socket, state: Pipelining, maxQueuedAnswerBytes: number): void {
  if (socket.destroyed) {
    // Nobody is left to answer what else waited: it is dropped, not forwarded.
    state.waiting.splice(0);
    return;
  }
  if (state.inFlight >= PIPELINE_DEPTH || state.queued > maxQueuedAnswerBytes) return;
  const next = state.waiting.shift();
  if (next) {
    // It counts in and runs now; the next one waits for the next answer to go out.
    state.inFlight++;
    next();
    return;
  }
  if (state.stopped) {
    state.stopped = false;
    resumeReadingSocket(socket);
  }
}

function stopReading(socket: Socket, state: Pipelining): void {
  if (state.stopped) return;
  state.stopped = true;
  // Node's HTTP server reads the socket in C++, where socket.pause() does not reach.
  stopReadingSocket(socket);
}

/**
 * A front door's request handler, taken in turn: a connection holds at most PIPELINE_DEPTH
 * requests in flight and the rest wait; a request pipelined behind an answer that closes the
 * connection is never served (the client sends it again on a new connection). Both doors, the
 * proxy's and the decision service's, admit requests through this one function.
 */
export function inTurn(
  maxQueuedAnswerBytes: number,
  serve: (req: IncomingMessage, res: ServerResponse) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  const serveUnlessClosing = (req: IncomingMessage, res: ServerResponse) => {
    if (isClosing(req.socket)) {
      req.on("error", ignoreClientError);
      res.on("error", ignoreClientError);
      req.resume();
      return;
    }
    serve(req, res);
  };
  return (req, res) => {
    if (!isClosing(req.socket) && !admitRequest(req.socket, maxQueuedAnswerBytes)) {
      req.on("error", ignoreClientError);
      res.on("error", ignoreClientError);
      return waitTurn(req.socket, () => serveUnlessClosing(req, res));
    }
    serveUnlessClosing(req, res);
  };
}

/** A client that goes away mid-request is not the gateway's fault; 'close' observes it. */
export function ignoreClientError(): void {}

// The public port of a group of workers. The primary listens and accepts, and hands each
// connection to the workers in turn, as node:cluster's round-robin does, keeping its own copy of
// the socket until the worker says it took it. node:cluster's own hand-over loses a connection sent
// to a worker that dies before taking it (the primary's copy is never closed: the client waits
// forever), and closes the port once no worker is left (clients are refused while restarts back
// off; with PORT=0 the port even changes). Here a connection a worker did not take goes to
// another, and while no worker serves, the primary answers it itself with the Error object: the
// port is open, and every connection answered or closed, for as long as the primary lives.
import type { Worker } from "node:cluster";
import { randomUUID } from "node:crypto";
import net, { type Socket } from "node:net";
import type { Logger } from "pino";
import { type ErrorCode, gatewayError } from "../errors.ts";
import { UNMATCHED } from "../metrics.ts";
import { rawAnswer } from "../replies.ts";
import { CONNECTION, type ConnectionMessage, TAKEN, type TakenMessage, typeOf } from "./protocol.ts";

/**
 * How long the primary reads (and drops) what a client it answered itself still sends, before it
 * closes the connection. Closing with the request unread would reset the connection, and the
 * client could lose the answer with it.
 */
const LINGER_MS = 2000;

interface Taker {
  readonly worker: Worker;
  /** Sockets sent and not yet taken, by hand-over id. */
  readonly inTransit: Map<number, Socket>;
}

export interface Dispatcher {
  /** The listener (not listening yet). */
  readonly server: net.Server;
  /** The worker serves: it gets its turn of the connections. */
  take(worker: Worker): void;
  /** The worker is gone (or going): what it had not taken goes to another, or is answered here. */
  drop(worker: Worker): void;
}

export function createDispatcher(options: {
  readonly logger: Logger;
  /** Connections the primary holds at once (handed over, not yet taken; or answered here). */
  readonly maxConnections: number;
  /** The answer while no worker serves (shutting down, or all of them restarting). */
  refusal(): ErrorCode;
}): Dispatcher {
  const takers: Taker[] = [];
  const all = new Map<Worker, Taker>();
  let turn = 0;
  let nextId = 0;
  // Paused: nothing of a connection is read here, so a worker that did not take it left it whole.
  const server = net.createServer({ pauseOnConnect: true }, dispatch);
  server.maxConnections = options.maxConnections;

  function dispatch(socket: Socket): void {
    if (socket.destroyed) return;
    const taker = takers[turn++ % Math.max(takers.length, 1)];
    if (taker === undefined) return answerHere(socket);
    const id = nextId++;
    taker.inTransit.set(id, socket);
    const message: ConnectionMessage = { type: CONNECTION, id };
    // The socket stays open here (keepOpen) until the worker says it took it.
    taker.worker.send(message, socket, { keepOpen: true }, (error: Error | null) => {
      // The channel is closing: this worker is on its way out.
      if (error) stopTurns(taker, true);
    });
  }

  /** The worker gets no more connections; those it had not taken, with `resend`, go elsewhere. */
  function stopTurns(taker: Taker, resend: boolean): void {
    const at = takers.indexOf(taker);
    if (at !== -1) takers.splice(at, 1);
    if (!resend) return;
    const left = [...taker.inTransit.values()];
    taker.inTransit.clear();
    for (const socket of left) dispatch(socket);
  }

  function answerHere(socket: Socket): void {
    const reply = gatewayError(options.refusal());
    const requestId = randomUUID();
    // One access line, as for any answer (its request was never read: no method, no path).
    options.logger.info(
      {
        reqId: requestId,
        operation: UNMATCHED,
        status: reply.status,
        code: reply.code,
        reason: reply.reason,
      },
      "request",
    );
    const linger = setTimeout(() => socket.destroy(), LINGER_MS);
    linger.unref();
    socket.on("close", () => clearTimeout(linger));
    socket.on("error", () => socket.destroy());
    socket.resume();
    // The client's end (after it read the answer) ends the connection: allowHalfOpen is off.
    socket.end(rawAnswer(reply, requestId));
  }

  return {
    server,
    take(worker) {
      let taker = all.get(worker);
      if (taker === undefined) {
        const created: Taker = { worker, inTransit: new Map() };
        taker = created;
        all.set(worker, created);
        worker.on("message", (message: unknown) => {
          if (typeOf(message) !== TAKEN) return;
          const { id, taken } = message as TakenMessage;
          const socket = created.inTransit.get(id);
          if (socket === undefined) return;
          created.inTransit.delete(id);
          // The worker holds its own copy of the connection now: the primary's goes.
          if (taken) socket.destroy();
          else {
            // It takes no more (it is draining): this one, and the next it refuses, go elsewhere.
            stopTurns(created, false);
            dispatch(socket);
          }
        });
      }
      if (!takers.includes(taker)) takers.push(taker);
    },
    drop(worker) {
      const taker = all.get(worker);
      if (taker === undefined) return;
      all.delete(worker);
      // Called once its channel is closed: every 'taken' it sent has been read by then, so what
      // is left was not taken, and nothing of it was read.
      stopTurns(taker, true);
    },
  };
}

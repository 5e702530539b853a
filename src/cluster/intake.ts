// How a worker takes the connections its primary hands over (dispatch.ts): it says at once that it
// took each (before reading a byte of it, so that one it never said it took is whole for another
// worker), then serves it on its public server as if the server had accepted it.
import type { Server } from "node:http";
import type { Socket } from "node:net";
import { CONNECTION, type ConnectionMessage, TAKEN, type TakenMessage, typeOf } from "./protocol.ts";

export interface Intake {
  /** The group's public port (the primary's). */
  readonly port: number;
  /** Takes no more connections (the primary sends them elsewhere); `done` once all taken have closed. */
  close(done: () => void): void;
}

export function takeConnections(server: Server, port: number): Intake {
  const open = new Set<Socket>();
  let closing = false;
  let whenClosed: (() => void) | undefined;
  const settle = () => {
    if (closing && open.size === 0 && whenClosed) {
      const done = whenClosed;
      whenClosed = undefined;
      done();
    }
  };
  // Node's HTTP server starts checking its headers and request timeouts, and keeps the list of
  // connections that closeIdleConnections() reads, when it starts listening. This server never
  // listens itself: it is told it does, once, so that a connection handed over is held to the
  // same timeouts (test/slow/worker-deaths.test.ts fails if a slow client is not).
  server.emit("listening");
  process.on("message", (message: unknown, socket: unknown) => {
    if (typeOf(message) !== CONNECTION) return;
    const { id } = message as ConnectionMessage;
    const taken = !closing && socket !== undefined;
    const reply: TakenMessage = { type: TAKEN, id, taken };
    if (process.connected) process.send?.(reply);
    if (!taken) {
      // The primary keeps its own copy and sends it elsewhere; this process lets go of its own.
      (socket as Socket | undefined)?.destroy();
      return;
    }
    const connection = socket as Socket;
    // Over the cap, as Node's own server does: closed without a word.
    if (open.size >= server.maxConnections) return void connection.destroy();
    open.add(connection);
    connection.once("close", () => {
      open.delete(connection);
      settle();
    });
    // What the server would have set on a socket it accepted itself.
    connection.allowHalfOpen = true;
    connection.setNoDelay(true);
    server.emit("connection", connection);
  });
  return {
    port,
    close(done) {
      closing = true;
      whenClosed = done;
      settle();
    },
  };
}

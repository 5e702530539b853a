// Answers a client does not read. Node's socket timer cannot bound them: it is the keep-alive
// timer too, and any write re-arms it. So the gateway looks at each connection with bytes waiting
// to be sent, about once a second: one whose writes have not moved for server.sendTimeoutMs, or
// whose current answer has been going for server.sendDeadlineMs (Envoy's max_stream_duration),
// is cut. The answer is counted as refused (reason request, SEND_TIMEOUT), and its access line
// says 499, as for any answer the client did not take whole.
import type { Server } from "node:http";
import type { Socket } from "node:net";
import { type GatewayError, gatewayError } from "../errors.ts";
import { pendingResponse } from "../node-internals.ts";
import { exchangeOf } from "./exchange.ts";

export interface SendLimits {
  readonly sendTimeoutMs: number;
  readonly sendDeadlineMs: number;
}

/**
 * What the watchdog remembers of one connection. Kept in its own map, not on Node's socket or
 * response: a property added to some of them gives them hidden classes of their own, and Node's
 * stream code then reads every socket's and response's properties megamorphically.
 */
export interface SendWatch {
  /** Bytes the kernel had taken when the connection was last seen moving. */
  sent: number;
  /** When it was last seen moving; undefined while nothing waits to be sent. */
  movedAt: number | undefined;
  /** The answer under way when last seen, and since when. */
  answer: object | undefined;
  answerSince: number;
}

export function newSendWatch(): SendWatch {
  return { sent: 0, movedAt: undefined, answer: undefined, answerSince: 0 };
}

const STALLED: GatewayError = gatewayError("SEND_TIMEOUT", "The client did not read the answer in time");
const TOO_LONG: GatewayError = gatewayError("SEND_TIMEOUT", "The answer took longer than the send deadline");

/** Watches the server's connections until it closes. */
export function watchSends(server: Server, limits: SendLimits): void {
  const open = new Map<Socket, SendWatch>();
  server.on("connection", (socket: Socket) => {
    open.set(socket, newSendWatch());
    socket.once("close", () => open.delete(socket));
  });
  const everyMs = Math.min(1000, Math.max(50, limits.sendTimeoutMs / 4));
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const [socket, watch] of open) {
      const verdict = judgeSending(socket, watch, now, limits);
      if (verdict) cut(socket, verdict);
    }
  }, everyMs);
  sweep.unref();
  server.once("close", () => clearInterval(sweep));
}

/** Why the connection must be cut, or undefined. Exported for its unit test. */
export function judgeSending(
  socket: Socket,
  watch: SendWatch,
  now: number,
  limits: SendLimits,
): GatewayError | undefined {
  const answer = pendingResponse(socket);
  if (answer !== undefined && (answer as { headersSent?: boolean }).headersSent) {
    if (watch.answer !== answer) {
      watch.answer = answer;
      watch.answerSince = now;
    } else if (now - watch.answerSince > limits.sendDeadlineMs) return TOO_LONG;
  } else watch.answer = undefined;
  if (socket.writableLength === 0) {
    watch.movedAt = undefined;
    return undefined;
  }
  // bytesWritten counts what is queued as well: what the kernel took is the difference.
  const sent = socket.bytesWritten - socket.writableLength;
  if (watch.movedAt === undefined || sent > watch.sent) {
    watch.sent = sent;
    watch.movedAt = now;
    return undefined;
  }
  return now - watch.movedAt > limits.sendTimeoutMs ? STALLED : undefined;
}

function cut(socket: Socket, why: GatewayError): void {
  const answer = pendingResponse(socket);
  const exchange = answer === undefined ? undefined : exchangeOf(answer);
  if (exchange && !exchange.finished) exchange.rejection = why;
  socket.destroy();
}

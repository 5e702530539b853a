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

const PROGRESS = Symbol("send progress");
const ANSWER_STARTED = Symbol("answer started");
interface Progress {
  /** Bytes the kernel has taken, as last seen. */
  sent: number;
  at: number;
}
type Watched = Socket & { [PROGRESS]?: Progress | undefined };
type Started = object & { [ANSWER_STARTED]?: number };

const STALLED: GatewayError = gatewayError("SEND_TIMEOUT", "The client did not read the answer in time");
const TOO_LONG: GatewayError = gatewayError("SEND_TIMEOUT", "The answer took longer than the send deadline");

/** Watches the server's connections until it closes. */
export function watchSends(server: Server, limits: SendLimits): void {
  const open = new Set<Watched>();
  server.on("connection", (socket: Watched) => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  });
  const everyMs = Math.min(1000, Math.max(50, limits.sendTimeoutMs / 4));
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const socket of open) {
      const verdict = judgeSending(socket, now, limits);
      if (verdict) cut(socket, verdict);
    }
  }, everyMs);
  sweep.unref();
  server.once("close", () => clearInterval(sweep));
}

/** Why the connection must be cut, or undefined. Exported for its unit test. */
export function judgeSending(socket: Watched, now: number, limits: SendLimits): GatewayError | undefined {
  const answer = pendingResponse(socket) as Started | undefined;
  if (answer !== undefined && (answer as { headersSent?: boolean }).headersSent) {
    const started = answer[ANSWER_STARTED];
    if (started === undefined) answer[ANSWER_STARTED] = now;
    else if (now - started > limits.sendDeadlineMs) return TOO_LONG;
  }
  if (socket.writableLength === 0) {
    socket[PROGRESS] = undefined;
    return undefined;
  }
  // bytesWritten counts what is queued as well: what the kernel took is the difference.
  const sent = socket.bytesWritten - socket.writableLength;
  const progress = socket[PROGRESS];
  if (progress === undefined || sent > progress.sent) {
    socket[PROGRESS] = { sent, at: now };
    return undefined;
  }
  return now - progress.at > limits.sendTimeoutMs ? STALLED : undefined;
}

function cut(socket: Socket, why: GatewayError): void {
  const answer = pendingResponse(socket);
  const exchange = answer === undefined ? undefined : exchangeOf(answer);
  if (exchange && !exchange.finished) exchange.rejection = why;
  socket.destroy();
}

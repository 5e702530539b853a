// The backend answers the gateway holds in memory to judge them whole (a JSON answer a policy
// reads), bounded for the process and for each connection. A held answer counts from its first
// buffered byte until its response closes (handed to the kernel, or the connection gone; observe
// calls release): a client that does not read keeps it held, and that must not grow without end.
// The counts live on the exchange, so that no listener or closure is made per request.
//
// A connection's count also reserves the cap for each answer asked for and not yet arriving: a
// client pipelining 32 requests in one write would otherwise have all 32 forwarded before the
// first answer said how large they are. The reservation gives way to the real bytes as they come.
import { holdAnswerBytes, releaseAnswerBytes } from "./connection-state.ts";
import type { CoreExchange } from "./exchange.ts";

export interface AnswerBudget {
  /** The process's room is used up (one more answer of the cap would not fit): an answer that would be held must not be asked for. */
  isFull(): boolean;
  /** Counts the cap against the exchange's connection until its answer arrives (or it closes). */
  reserve(exchange: CoreExchange): void;
  /** Room for `bytes` more of this exchange's answer; false when they do not fit (nothing is taken). */
  take(exchange: CoreExchange, bytes: number): boolean;
  /** The exchange's response closed (handed to the kernel, or cut): what it held goes back, bytes and memory. */
  release(exchange: CoreExchange): void;
}

export interface AnswerBudgetLimits {
  /** For the process. */
  readonly maxBufferedBytes: number;
  /** For one connection, past which its next request waits (connection-state.ts). */
  readonly maxQueuedAnswerBytes: number;
  /** The most of one answer held (the reservation). */
  readonly maxResponseBodyBytes: number;
}

export function createAnswerBudget(limits: AnswerBudgetLimits): AnswerBudget {
  const { maxBufferedBytes, maxQueuedAnswerBytes, maxResponseBodyBytes } = limits;
  let held = 0;

  return {
    // Full once an answer of the largest size held would no longer fit: waiting until held bytes
    // reach the limit exactly would almost never close the door, since an answer that does not
    // fit is never taken, and every request forwarded meanwhile would have its answer streamed
    // unchecked (or refused with 502) instead of getting 503 before it reached the backend.
    isFull: () => held > 0 && held + maxResponseBodyBytes > maxBufferedBytes,
    reserve(exchange) {
      // A client gone while its body was read: its response closed, and released, already.
      if (exchange.finished) return;
      exchange.reservedAnswerBytes = maxResponseBodyBytes;
      holdAnswerBytes(exchange.req.socket, maxResponseBodyBytes);
    },
    take(exchange, bytes) {
      // A response already closed has released all it will.
      if (held + bytes > maxBufferedBytes || exchange.finished) return false;
      exchange.heldAnswerBytes += bytes;
      held += bytes;
      holdAnswerBytes(exchange.req.socket, bytes);
      const reserved = exchange.reservedAnswerBytes;
      if (reserved > 0) {
        exchange.reservedAnswerBytes = 0;
        releaseAnswerBytes(exchange.req.socket, reserved, maxQueuedAnswerBytes);
      }
      return true;
    },
    release(exchange) {
      const answer = exchange.heldAnswer;
      // Finished: every byte is with the kernel and no write of it is pending, so nothing reads
      // the body again. Cut short, a write may still be pending: the collector frees it then.
      if (answer !== undefined && exchange.res.writableFinished) answer.free();
      exchange.heldAnswer = undefined;
      const bytes = exchange.heldAnswerBytes + exchange.reservedAnswerBytes;
      if (bytes === 0) return;
      held -= exchange.heldAnswerBytes;
      exchange.heldAnswerBytes = 0;
      exchange.reservedAnswerBytes = 0;
      releaseAnswerBytes(exchange.req.socket, bytes, maxQueuedAnswerBytes);
    },
  };
}

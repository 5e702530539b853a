// The backend answers the gateway holds in memory to judge them whole (a JSON answer a policy
// reads), bounded for the process and for each connection. A held answer counts from its first
// buffered byte until its response closes (handed to the kernel, or the connection gone): a client
// that does not read keeps it held, and that is what must not grow without end.
//
// A connection's count also reserves the cap for each answer asked for and not yet arriving: a
// client pipelining 32 requests in one write would otherwise have all 32 forwarded before the
// first answer said how large they are. The reservation gives way to the real bytes as they come.
import { holdAnswerBytes, releaseAnswerBytes } from "./connection-state.ts";
import type { CoreExchange } from "./exchange.ts";

export interface AnswerBudget {
  /** The process's room is used up: an answer that would be held must not be asked for. */
  isFull(): boolean;
  /** Counts the cap against the exchange's connection until its answer arrives (or it closes). */
  reserve(exchange: CoreExchange): void;
  /** Room for `bytes` more of this exchange's answer; false when they do not fit (nothing is taken). */
  take(exchange: CoreExchange, bytes: number): boolean;
}

export interface AnswerBudgetLimits {
  /** For the process. */
  readonly maxBufferedBytes: number;
  /** For one connection, past which its next request waits (connection-state.ts). */
  readonly maxQueuedAnswerBytes: number;
  /** The most of one answer held (the reservation). */
  readonly maxResponseBodyBytes: number;
}

const HELD = Symbol("answer bytes held");
const RESERVED = Symbol("answer bytes reserved");
type Holding = CoreExchange & { [HELD]?: number; [RESERVED]?: number };

export function createAnswerBudget(limits: AnswerBudgetLimits): AnswerBudget {
  const { maxBufferedBytes, maxQueuedAnswerBytes, maxResponseBodyBytes } = limits;
  let held = 0;

  const release = (exchange: Holding) => {
    const bytes = (exchange[HELD] ?? 0) + (exchange[RESERVED] ?? 0);
    held -= exchange[HELD] ?? 0;
    exchange[HELD] = 0;
    exchange[RESERVED] = 0;
    releaseAnswerBytes(exchange.req.socket, bytes, maxQueuedAnswerBytes);
  };
  // 'close' follows 'finish' and an aborted answer alike: released once, whichever ends it.
  const releaseOnClose = (exchange: Holding) => {
    if (exchange[HELD] === undefined && exchange[RESERVED] === undefined) {
      exchange.res.once("close", () => release(exchange));
    }
  };

  return {
    isFull: () => held >= maxBufferedBytes,
    reserve(exchange: Holding) {
      if (exchange.finished) return;
      releaseOnClose(exchange);
      exchange[RESERVED] = maxResponseBodyBytes;
      holdAnswerBytes(exchange.req.socket, maxResponseBodyBytes);
    },
    take(exchange: Holding, bytes) {
      // A response already closed would never release what it took.
      if (held + bytes > maxBufferedBytes || exchange.finished) return false;
      releaseOnClose(exchange);
      exchange[HELD] = (exchange[HELD] ?? 0) + bytes;
      held += bytes;
      holdAnswerBytes(exchange.req.socket, bytes);
      const reserved = exchange[RESERVED] ?? 0;
      if (reserved > 0) {
        exchange[RESERVED] = 0;
        releaseAnswerBytes(exchange.req.socket, reserved, maxQueuedAnswerBytes);
      }
      return true;
    },
  };
}

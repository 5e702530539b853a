// Graceful shutdown, the one way every gateway process stops on SIGTERM or SIGINT: say so, take
// the first step (readiness false, drain), and leave the rest to the process; a deadline ends it
// with exit 1 should requests (or workers) still be open. The same signal again within a second
// is the same shutdown (under `npm start`, Ctrl-C and systemd's stop reach the gateway twice,
// once from npm); a signal after that means now.
import type { LoggerHandle } from "./logger.ts";

export interface ShutdownPlan {
  readonly log: LoggerHandle;
  /** From the first signal to a forced exit. */
  readonly deadlineMs: number;
  /** Fields for the "shutting down" line (e.g. the drain delay, the workers left). */
  fields(): Record<string, unknown>;
  /** The first step; the process exits by itself once what it started completes. */
  begin(): void;
  /**
   * At the deadline, before exiting 1: say what is still open and end it (a process answers or
   * cuts its requests and logs them; a primary kills its workers). Awaited when it returns a promise.
   */
  onDeadline(): void | Promise<void>;
  /** On a second signal, before exiting (a primary passes the signal on to its workers). */
  onSecondSignal?(signal: NodeJS.Signals): void;
}

/** A repeat of the first signal within this long is the same request to stop. */
export const REPEATED_SIGNAL_MS = 1000;

/** Installs the SIGTERM and SIGINT handlers; returns stop(why) for other reasons to stop. */
export function shutdownOnSignals(plan: ShutdownPlan): (why: string) => void {
  const { logger, flush } = plan.log;
  let stopping = false;
  let firstSignal: { readonly signal: NodeJS.Signals; readonly at: number } | undefined;
  const stop = (why: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ why, ...plan.fields() }, "shutting down");
    const deadline = setTimeout(async () => {
      try {
        await plan.onDeadline();
      } finally {
        flush();
        process.exit(1);
      }
    }, plan.deadlineMs);
    deadline.unref();
    plan.begin();
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (!stopping) {
      firstSignal = { signal, at: performance.now() };
      return stop(signal);
    }
    if (firstSignal?.signal === signal && performance.now() - firstSignal.at < REPEATED_SIGNAL_MS) {
      logger.info({ signal }, "signal repeated; already shutting down");
      return;
    }
    logger.warn({ signal }, "second signal; exiting now");
    plan.onSecondSignal?.(signal);
    flush();
    process.exit(1);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  return stop;
}

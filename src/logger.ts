import pino, { type DestinationStream, type Logger } from "pino";

export type { Logger } from "pino";

// Key material must never reach a log line, whoever logs a header object.
const REDACT = [
  "authorization",
  "headers.authorization",
  "req.headers.authorization",
  "*.headers.authorization",
];
const CENSOR = "[redacted]";

/**
 * A child for log lines whose fields are all strings, numbers or booleans (the access line):
 * there, key material could only sit in a top-level authorization field. The wildcard path
 * above makes pino run its redactor over every field of every line, which measured about half
 * of the access line's cost; on a flat line it can never match anything.
 */
export function flatLineLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: ["authorization"], censor: CENSOR } });
}

export interface LoggerHandle {
  readonly logger: Logger;
  /** Writes out what the asynchronous destination still holds; called on shutdown. */
  flush(): void;
}

export function createLogger(level: string, destination?: DestinationStream): LoggerHandle {
  // Asynchronous, buffered stdout: the hot path never waits on a write. flush() empties it.
  // Several worker processes share one stdout, usually a pipe: a write of at most PIPE_BUF
  // (4096 bytes on Linux) is atomic there, and SonicBoom starts every write at a line boundary,
  // so with maxWrite at 4096 the lines of two workers never interleave. The periodic flush keeps
  // a quiet gateway's lines from waiting in the buffer.
  const sonic = destination
    ? undefined
    : pino.destination({ dest: 1, sync: false, minLength: 2048, maxWrite: 4096, periodicFlush: 500 });
  const logger = pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT, censor: CENSOR },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? sonic,
  );
  return {
    logger,
    flush() {
      if (sonic) {
        try {
          sonic.flushSync();
        } catch {
          // not ready yet or already closed: nothing buffered to lose
        }
      }
    },
  };
}

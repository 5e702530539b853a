import cluster from "node:cluster";
import { fstatSync } from "node:fs";
import { isatty } from "node:tty";
import pino, { type DestinationStream, type Logger } from "pino";
import { measureLinesOnce } from "./log-destination.ts";

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
 * A child for log lines whose fields are all strings, numbers or booleans (the access line, the
 * deprecated-call line), but for objects of such values (the policies' notes): there, key material
 * could only sit in an authorization field at the top or in one of those objects, and it is
 * censored there. The wildcard path above makes pino run its redactor over every field of every
 * line; on a flat line it can never match anything.
 *
 * Such a line is also made into JSON by flatLine rather than by pino's general asJson, which
 * escapes every key character by character and looks up a serializer and a redacting stringifier
 * for each field: 18,100 instructions a line, written, against 31,400 (callgrind, decision mode's
 * access line). The line is the same text, byte for byte (test/logger.test.ts holds the two to
 * it); pino still decides the level, the time, the bindings and the write. It is set through
 * pino.symbols, pino's hatch for integrations; a logger whose options flatLine cannot mirror (a
 * nested key, a log formatter, serializers of its own), or a pino release whose fields differ,
 * keeps pino's asJson and the redaction paths.
 */
export function flatLineLogger(logger: Logger): Logger {
  const child = logger.child(
    {},
    { redact: { paths: ["authorization", "notes.authorization"], censor: CENSOR } },
  );
  const fields = child as unknown as Partial<PinoFields>;
  if (!mirrorsPino(fields)) return child;
  const general = fields[pino.symbols.asJsonSym];
  fields[pino.symbols.asJsonSym] = function flatAsJson(this: PinoFields, obj, msg, num, time) {
    return flatLine(this, obj, msg, num, time) ?? general.call(this, obj, msg, num, time);
  };
  return child;
}

type AsJson = (
  this: PinoFields,
  obj: Record<string, unknown>,
  msg: unknown,
  num: number,
  time: string,
) => string;

/** What pino keeps on a logger and flatLine reads (pino.symbols). */
interface PinoFields {
  [key: symbol]: unknown;
  [pino.symbols.asJsonSym]: AsJson;
  [pino.symbols.lsCacheSym]: Record<number, string>;
  [pino.symbols.chindingsSym]: string;
  [pino.symbols.endSym]: string;
  [pino.symbols.messageKeySym]: string;
}

/** Whether the logger's line is pino's plain one, which flatLine writes (checked once, at creation). */
function mirrorsPino(fields: Partial<PinoFields>): fields is PinoFields {
  const { symbols } = pino;
  const formatters = fields[symbols.formattersSym] as { log?: unknown } | undefined;
  const serializers = fields[symbols.serializersSym];
  return (
    typeof fields[symbols.asJsonSym] === "function" &&
    typeof fields[symbols.lsCacheSym] === "object" &&
    typeof fields[symbols.chindingsSym] === "string" &&
    typeof fields[symbols.endSym] === "string" &&
    typeof fields[symbols.messageKeySym] === "string" &&
    !fields[symbols.nestedKeySym] &&
    formatters !== undefined &&
    formatters.log === undefined &&
    // pino's own serializer of errors only: flatLine hands any line with an object that is not
    // plain (an Error) back to pino.
    typeof serializers === "object" &&
    serializers !== null &&
    Object.keys(serializers).every((key) => key === "err")
  );
}

/**
 * The line pino's asJson writes for these fields, or undefined when a value is not a string, a
 * number, a boolean, undefined, or a plain object of those (pino's asJson then writes it).
 */
function flatLine(
  logger: PinoFields,
  obj: Record<string, unknown>,
  msg: unknown,
  num: number,
  time: string,
): string | undefined {
  let line = logger[pino.symbols.lsCacheSym][num] + time + logger[pino.symbols.chindingsSym];
  for (const key in obj) {
    const value = obj[key];
    if (value === undefined) continue;
    const text = key === "authorization" ? CENSORED : jsonOf(value);
    if (text === undefined) return undefined;
    line += fieldStart(key) + text;
  }
  if (typeof msg === "string") line += fieldStart(logger[pino.symbols.messageKeySym]) + jsonString(msg);
  else if (msg !== undefined) return undefined;
  return line + logger[pino.symbols.endSym];
}

const CENSORED = JSON.stringify(CENSOR);

// A line's field names are the code's own, a few dozen in all: each one's `,"name":` is made once.
// JSON.stringify is a call into the runtime that costs more than the few bytes it writes.
const fieldStarts = new Map<string, string>();
function fieldStart(key: string): string {
  let start = fieldStarts.get(key);
  if (start === undefined) {
    start = `,${JSON.stringify(key)}:`;
    if (fieldStarts.size < MAX_FIELD_NAMES) fieldStarts.set(key, start);
  }
  return start;
}
const MAX_FIELD_NAMES = 1024;

/** What JSON escapes in a string: quotes, backslashes, control characters, lone surrogate halves. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

function jsonString(value: string): string {
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

function jsonOf(value: unknown): string | undefined {
  switch (typeof value) {
    case "string":
      return jsonString(value);
    case "number":
      return Number.isFinite(value) ? String(value) : "null";
    case "boolean":
      return String(value);
    case "object": {
      if (value === null || Object.getPrototypeOf(value) !== Object.prototype) return undefined;
      const object = value as Record<string, unknown>;
      for (const key in object) {
        const type = typeof object[key];
        if (type !== "string" && type !== "number" && type !== "boolean" && type !== "undefined")
          return undefined;
      }
      return JSON.stringify("authorization" in object ? { ...object, authorization: CENSOR } : object);
    }
    default:
      return undefined;
  }
}

export interface LoggerHandle {
  readonly logger: Logger;
  /** Writes out what the destination still holds; called on shutdown. */
  flush(): void;
}

export interface LoggerOptions {
  /**
   * Other processes write to the same stdout: cluster workers and their primary. Default: true
   * in a cluster worker.
   */
  readonly sharedStdout?: boolean;
  /** stdout is a file or /dev/null (see destinationOptions). Default: as fstat finds it. */
  readonly stdoutIsFile?: boolean;
}

/** Linux's PIPE_BUF: a pipe never interleaves a write of at most this many bytes with another's. */
const PIPE_BUF = 4096;

/**
 * Lines gathered before a write starts, alone on stdout. Each write is a call that costs the same
 * whether it carries one line or forty: asynchronous, a hand-over to libuv's thread pool and a
 * callback back on the event loop (two thread wake-ups, a third of a context switch per decision at
 * 2 KiB); to a file, a system call. At 12 KiB a busy gateway makes a sixth of the writes it made at
 * 2 KiB; a quiet one's lines wait for the periodic flush, as they already did for any line below
 * 2 KiB. Below maxWrite, as SonicBoom requires.
 */
const BATCH_BYTES = 12 * 1024;

/**
 * The stdout destination. Alone on a pipe or a socket (a container's log collector, a terminal),
 * the process writes asynchronously: one write in flight at a time, of at most maxWrite bytes, the
 * next one when the event loop comes round, so it drains at most maxWrite bytes a turn and lines
 * logged faster than that wait in memory. At SonicBoom's own default, 16 KiB, a busy gateway at
 * full load drains as fast as it logs and its memory stays flat; at PIPE_BUF it did not. Not more:
 * SonicBoom measures its last buffer on every line, so a bigger one costs CPU that grows with it.
 *
 * Alone on a file or /dev/null (stdoutIsFile), a write never waits for a reader: it is made
 * synchronously, BATCH_BYTES at a time, without the thread pool's two hand-overs. Memory stays
 * within one batch, whatever the load.
 *
 * Workers share stdout (usually a pipe) and need writes of at most PIPE_BUF, which a pipe keeps
 * whole; SonicBoom starts every write at a line boundary, so lines of two workers never
 * interleave. Asynchronous, that is too few lines a turn: a worker at full load logs faster than
 * it drains and grows without bound. So a worker writes synchronously once 2 KiB of lines are
 * waiting, in writes of at most PIPE_BUF: its buffer stays within a few KiB,
 * and a log reader that cannot keep up slows the worker down (SonicBoom retries a full pipe)
 * instead of growing its memory. The periodic flush keeps a quiet gateway's lines from waiting.
 */
export function destinationOptions(sharedStdout: boolean, toFile = false) {
  if (sharedStdout) {
    return { dest: 1, sync: true, minLength: 2048, maxWrite: PIPE_BUF, periodicFlush: 500 } as const;
  }
  return { dest: 1, sync: toFile, minLength: BATCH_BYTES, maxWrite: 16 * 1024, periodicFlush: 500 } as const;
}

/**
 * Whether stdout is a regular file or a character device that is no terminal (/dev/null): there a
 * write never waits for a reader. A pipe, a socket or a terminal may.
 */
export function stdoutIsFile(): boolean {
  try {
    const stat = fstatSync(1);
    return stat.isFile() || (stat.isCharacterDevice() && !isatty(1));
  } catch {
    return false;
  }
}

// Date's toISOString formats every call through snprintf: about 7,000 instructions (callgrind),
// paid on every log line by pino's isoTime and on every deprecated call by its calledAt. The same
// text, with the part up to the second formatted once a second.
let formattedSecond = -1;
let secondPrefix = "";

/** new Date(ms).toISOString(), for a time in whole milliseconds. */
export function isoTimestamp(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0) return new Date(ms).toISOString();
  const millis = ms % 1000;
  const second = ms - millis;
  if (second !== formattedSecond) {
    const text = new Date(second).toISOString(); // "2026-11-22T01:07:01.000Z"
    formattedSecond = second;
    secondPrefix = text.slice(0, -4);
  }
  return `${secondPrefix}${millis < 10 ? "00" : millis < 100 ? "0" : ""}${millis}Z`;
}

function isoTime(): string {
  return `,"time":"${isoTimestamp(Date.now())}"`;
}

export function createLogger(
  level: string,
  destination?: DestinationStream,
  options: LoggerOptions = {},
): LoggerHandle {
  // Buffered stdout: the hot path never waits on a reader. flush() empties it.
  const sonic = destination
    ? undefined
    : pino.destination(
        destinationOptions(options.sharedStdout ?? cluster.isWorker, options.stdoutIsFile ?? stdoutIsFile()),
      );
  if (sonic) measureLinesOnce(sonic);
  const logger = pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: isoTime,
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

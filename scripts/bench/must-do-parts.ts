// What the must-do measurement (must-do.ts) and the must-do proxy (bare-proxy.ts --must-do) share:
// the same validator lookup and the same access-line logger.
import { openSync } from "node:fs";
import pino from "pino";
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import { createLogger, destinationOptions, flatLineLogger, type Logger } from "../../src/logger.ts";
import type { ApiDescription } from "../../src/openapi.ts";

/** The deadline both set: the gateway's default upstream.timeoutMs, read from its config schema. */
export const DEADLINE_MS = validateConfig({}, policies).upstream.timeoutMs;

/** The compiled ajv validator of an operation's answer with this status. */
export function answerValidator(api: ApiDescription, operationId: string, status: string) {
  const validate = api.operation(operationId)?.responses.get(status)?.validate;
  if (!validate) throw new Error(`${operationId} ${status} has no schema`);
  return validate;
}

/**
 * The access line's logger, writing to /dev/null in batches and synchronously, as the gateway
 * writes to a file or /dev/null (src/logger.ts): the floor pays what the gateway's own logging pays.
 */
export function accessLogToDevNull(): Logger {
  const destination = pino.destination({
    ...destinationOptions(false, true),
    dest: openSync("/dev/null", "w"),
  });
  return flatLineLogger(createLogger("info", destination).logger);
}

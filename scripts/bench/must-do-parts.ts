// The pieces the must-do measurement (must-do.ts) and the must-do proxy (bare-proxy.ts --must-do)
// share, so that the modelled and the measured bound do the same work the same way.
import { openSync } from "node:fs";
import pino from "pino";
import { createLogger, destinationOptions, flatLineLogger, type Logger } from "../../src/logger.ts";
import type { ApiDescription } from "../../src/openapi.ts";

/** The compiled ajv validator of an operation's answer with this status. */
export function answerValidator(api: ApiDescription, operationId: string, status: string) {
  const validate = api.operation(operationId)?.responses.get(status)?.validate;
  if (!validate) throw new Error(`${operationId} ${status} has no schema`);
  return validate;
}

/**
 * The access line's logger, writing to /dev/null in batches and synchronously: cheaper than the
 * gateway's asynchronous destination, whose writes go through libuv's thread pool, so that a
 * bound built with it is generous.
 */
export function accessLogToDevNull(): Logger {
  const destination = pino.destination({
    ...destinationOptions(false),
    sync: true,
    dest: openSync("/dev/null", "w"),
  });
  return flatLineLogger(createLogger("info", destination).logger);
}

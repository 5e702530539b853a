import assert from "node:assert/strict";
import { test } from "node:test";
import { createLogger, flatLineLogger } from "../src/logger.ts";
import { LogCapture } from "./harness.ts";

const KEY = "Bearer live_secret_key";

test("a header object logged at any depth never shows the Authorization value", () => {
  const capture = new LogCapture();
  const { logger } = createLogger("info", capture);
  logger.info({ authorization: KEY }, "top");
  logger.info({ headers: { authorization: KEY } }, "headers");
  logger.info({ req: { headers: { authorization: KEY } } }, "req");
  logger.info({ upstream: { headers: { authorization: KEY } } }, "nested");
  logger.flush();
  assert.equal(capture.lines.length, 4);
  for (const raw of capture.raw) assert.ok(!raw.includes("live_secret_key"), raw);
  assert.deepEqual(capture.lines[3]?.upstream, { headers: { authorization: "[redacted]" } });
});

test("the access line's logger still redacts a top-level authorization field", () => {
  const capture = new LogCapture();
  const access = flatLineLogger(createLogger("info", capture).logger);
  access.info({ operation: "listPets", status: 200, authorization: KEY }, "request");
  access.flush();
  assert.equal(capture.lines[0]?.authorization, "[redacted]");
  assert.equal(capture.lines[0]?.status, 200);
});

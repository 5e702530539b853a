import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { openSync } from "node:fs";
import { test } from "node:test";
import { createLogger, destinationOptions, flatLineLogger } from "../src/logger.ts";
import { LogCapture, PROJECT_ROOT } from "./harness.ts";

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

test("a busy gateway's access lines do not pile up in memory when the process has stdout to itself", async () => {
  // 100 turns of the event loop with 40 lines each (~11 KB a turn, as 40 busy connections make):
  // at 4096 bytes a write, as workers sharing a pipe must, some 700 KB would still be waiting.
  const child = spawn(process.execPath, ["test/fixtures/log-burst.ts", "100", "40"], {
    cwd: PROJECT_ROOT,
    stdio: ["ignore", openSync("/dev/null", "w"), "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const [code] = await once(child, "exit");
  assert.equal(code, 0, stderr);
  const { pending } = JSON.parse(stderr) as { pending: number };
  assert.ok(pending < 64 * 1024, `${pending} bytes still buffered`);
});

test("with workers sharing stdout every write stays within PIPE_BUF, so lines never interleave", () => {
  assert.equal(destinationOptions(true).maxWrite, 4096);
  assert.ok(destinationOptions(false).maxWrite > 4096);
});

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { createLogger, destinationOptions, flatLineLogger } from "../src/logger.ts";
import { LogCapture } from "./support/gateway.ts";
import { PROJECT_ROOT } from "./support/program.ts";

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

interface Burst {
  /** Bytes the logger still held at the end, and at most after any turn. */
  readonly pending: number;
  readonly maxPending: number;
  readonly loggedBytes: number;
  readonly writes: number;
  /** Turns in which the machine had not completed the write in flight by the turn's end. */
  readonly waitedTurns: number;
}

/** Runs test/fixtures/log-burst.ts with its stdout on /dev/null; resolves with what it measured. */
type BurstDestination = "alone" | "alone-file" | "shared" | "shared-async";

async function logBurst(turns: number, linesPerTurn: number, destination: BurstDestination): Promise<Burst> {
  const args = ["test/fixtures/log-burst.ts", String(turns), String(linesPerTurn), destination];
  const child = spawn(process.execPath, args, {
    cwd: PROJECT_ROOT,
    stdio: ["ignore", openSync("/dev/null", "w"), "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const [code] = await once(child, "exit");
  assert.equal(code, 0, stderr);
  return JSON.parse(stderr) as Burst;
}

test("a busy gateway's access lines do not pile up in memory, alone on stdout or as a worker sharing it", async (t) => {
  // 100 turns of the event loop with 40 lines each (~11 KB a turn, as 40 busy connections make).
  // The fixture lets every turn complete one asynchronous write, as an idle machine does, so what
  // is left is a matter of bytes, not of this machine's speed today: alone on a pipe, a write
  // starts once 12 KiB wait and takes up to 16 KiB, so at most about one turn's worth waits (11 KB;
  // 64 KiB leaves room for longer lines); alone on a file, the same batches are written at once. A
  // worker writes synchronously once 2 KiB wait: a few KiB at most.
  const turns = 100;
  for (const destination of ["alone", "alone-file"] as const) {
    const alone = await logBurst(turns, 40, destination);
    t.diagnostic(`${destination}: ${JSON.stringify(alone)}`);
    assert.ok(alone.loggedBytes > 1_000_000, `only ${alone.loggedBytes} bytes logged`);
    assert.ok(alone.maxPending < 64 * 1024, `${alone.maxPending} bytes buffered after a turn`);
    assert.ok(alone.pending < 64 * 1024, `${alone.pending} bytes still buffered`);
    // Few, large writes: each one costs a thread-pool round trip or a system call, whatever its size.
    assert.ok(
      alone.loggedBytes / alone.writes > 8 * 1024,
      `${alone.writes} writes of ${alone.loggedBytes} bytes`,
    );
  }
  const shared = await logBurst(turns, 40, "shared");
  assert.ok(shared.loggedBytes > 1_000_000, `only ${shared.loggedBytes} bytes logged`);
  assert.ok(shared.maxPending < 8 * 1024, `${shared.maxPending} bytes buffered after a turn, as a worker`);
  // The control: asynchronous writes of 4096 bytes, as workers made before, leave 7 KB more
  // behind every turn, some 700 KB at the end: the measure tells a draining destination from a
  // growing one.
  const asyncShared = await logBurst(turns, 40, "shared-async");
  t.diagnostic(
    `worker: ${JSON.stringify(shared)}; asynchronous 4 KiB writes: ${JSON.stringify(asyncShared)}`,
  );
  assert.ok(asyncShared.pending > 8 * 64 * 1024, `only ${asyncShared.pending} bytes buffered`);
});

test("with workers sharing stdout every write stays within PIPE_BUF, so lines never interleave", () => {
  for (const toFile of [false, true]) {
    assert.equal(destinationOptions(true, toFile).maxWrite, 4096);
    assert.equal(destinationOptions(true, toFile).sync, true);
  }
  assert.ok(destinationOptions(false).maxWrite > 4096);
});

/** What stdoutIsFile() says in a process whose stdout is `stdout`. */
async function stdoutIsFileWith(stdout: "pipe" | number): Promise<string> {
  const child = spawn(
    process.execPath,
    ["-e", 'import("./src/logger.ts").then((m) => process.stderr.write(String(m.stdoutIsFile())))'],
    { cwd: PROJECT_ROOT, stdio: ["ignore", stdout, "pipe"] },
  );
  let said = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    said += chunk.toString();
  });
  await once(child, "close");
  return said;
}

test("alone on a file or /dev/null the gateway writes its lines synchronously; on a pipe it never waits for the reader", async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), "stdout-")), "gateway.log");
  t.after(() => rmSync(dirname(file), { recursive: true, force: true }));
  assert.equal(await stdoutIsFileWith(openSync(file, "w")), "true");
  assert.equal(await stdoutIsFileWith(openSync("/dev/null", "w")), "true");
  assert.equal(await stdoutIsFileWith("pipe"), "false");
  assert.equal(destinationOptions(false, true).sync, true);
  assert.equal(destinationOptions(false, false).sync, false);
});

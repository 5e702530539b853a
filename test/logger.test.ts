import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import pino from "pino";
import { createLogger, destinationOptions, flatLineLogger, isoTimestamp } from "../src/logger.ts";
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

test("the access line's logger censors authorization among the policies' notes", () => {
  const capture = new LogCapture();
  const access = flatLineLogger(createLogger("info", capture).logger);
  access.info({ operation: "listPets", notes: { authorization: KEY, limitAdjusted: "clamped" } }, "request");
  assert.deepEqual(capture.lines[0]?.notes, { authorization: "[redacted]", limitAdjusted: "clamped" });
  assert.ok(!capture.raw[0]?.includes("live_secret_key"));
});

/** Lines whose values pino's asJson writes in every way it has: the flat line must read the same. */
const LINES: readonly [Record<string, unknown>, string | undefined][] = [
  [
    {
      reqId: "3b241101-e2bb-4255-8caf-4136c566a962",
      operation: "listPets",
      method: "GET",
      path: "/v1/pets?limit=20&name=%22x%22",
      status: 200,
      durationMs: 0.412,
      upstreamMs: undefined,
      consumer: "acme",
      decidedFor: "nginx",
      decision: "allow",
      aborted: false,
      notes: { limitAdjusted: "defaulted", daysToSunset: 1470 },
    },
    "request",
  ],
  [
    { quote: 'a "b" \\ c', control: "tab\tnew\nline\u0001", unicode: "é ü 中 \u2028", long: "x".repeat(150) },
    "msg",
  ],
  [
    { nan: Number.NaN, infinite: Number.POSITIVE_INFINITY, negative: -0, big: 1e21, small: 1e-7, yes: true },
    "numbers",
  ],
  [{ authorization: KEY, notes: {} }, 'a "quoted" message'],
  [
    { notes: { nested: { deeper: 1 } }, when: new Date(0), err: new Error("boom") },
    "objects pino writes itself",
  ],
  [{ operation: "getPet" }, undefined],
];

test("a flat line reads byte for byte as pino's own asJson writes it", () => {
  const flat = new LogCapture();
  const general = new LogCapture();
  const access = flatLineLogger(createLogger("info", flat).logger);
  // What flatLineLogger was before flatLine: pino's asJson with the redaction paths.
  const reference = createLogger("info", general).logger.child(
    {},
    { redact: { paths: ["authorization", "notes.authorization"], censor: "[redacted]" } },
  );
  for (const [fields, msg] of LINES) {
    access.info(fields, msg);
    reference.info(fields, msg);
  }
  const timeless = (raw: string) => raw.replace(/"time":"[^"]*"/, '"time":""');
  assert.equal(flat.raw.length, LINES.length);
  assert.deepEqual(flat.raw.map(timeless), general.raw.map(timeless));
});

test("the installed pino has the fields the flat line reads (else every line would take pino's slower way)", () => {
  const { logger } = createLogger("info", new LogCapture());
  const access = flatLineLogger(logger) as unknown as Record<symbol, unknown>;
  assert.notEqual(
    access[pino.symbols.asJsonSym],
    (logger as unknown as Record<symbol, unknown>)[pino.symbols.asJsonSym],
  );
});

test("a timestamp reads as Date's toISOString, whichever second it falls in", () => {
  const now = Date.now();
  const times = [
    0,
    1,
    999,
    1000,
    1001,
    now,
    now + 1,
    now + 999,
    now + 1000,
    now - 1,
    now,
    253402300799999,
    253402300800000,
  ];
  for (const ms of [...times, 1.5, -1, -86_400_001])
    assert.equal(isoTimestamp(ms), new Date(ms).toISOString(), String(ms));
  assert.throws(() => isoTimestamp(Number.NaN), RangeError);
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

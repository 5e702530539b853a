// The commands that read gateway logs (npm run usage, npm run deprecation-report, and the change
// review's --logs) meet a log with one 50 MB line without a newline between good ones: each
// reads the good lines, says it skipped one, and its memory does not grow by the line (readline,
// which they used, held it whole). Measures memory and writes 50 MB, so it runs alone.
import assert from "node:assert/strict";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { runProgram } from "../support/processes.ts";
import { PROJECT_ROOT } from "../support/program.ts";

const LONG_LINE_MB = 50;
/**
 * Growth of the peak RSS allowed for the log with the long line against the log without it: half
 * the line (readline grew it by 140 to 190 MB; the reader by 1 to 13, as the collector's timing goes).
 */
const GROWTH_LIMIT_MB = 25;
const NOW = "2026-11-25T00:00:00Z";

const folder = mkdtempSync(join(tmpdir(), "log-line-cap-"));
after(() => rmSync(folder, { recursive: true, force: true }));

/** One line of each kind a command reads: a usage line, a deprecated call, an access line. */
function goodLines(hour: number): string[] {
  const time = `2026-11-24T${String(hour).padStart(2, "0")}:00:00.000Z`;
  return [
    JSON.stringify({
      level: 30,
      time,
      consumer: "acme",
      operation: "listPets",
      calls: 3,
      firstSeen: time,
      lastSeen: time,
      parameters: ["status"],
      values: { status: ["sold"] },
      statuses: ["200"],
      msg: "usage",
    }),
    JSON.stringify({
      level: 30,
      time,
      operation: "getPet",
      consumer: "initech",
      calledAt: time,
      msg: "deprecated call",
    }),
    JSON.stringify({
      level: 30,
      time,
      operation: "listPets",
      consumer: "acme",
      status: 200,
      path: "/v1/pets?status=sold",
      msg: "request",
    }),
  ];
}

/** A log of good lines around, when asked, one line of LONG_LINE_MB without a newline in it. */
function writeLog(name: string, withLongLine: boolean): string {
  const file = join(folder, name);
  const fd = openSync(file, "w");
  writeSync(fd, `${goodLines(8).join("\n")}\n`);
  if (withLongLine) {
    // Written a megabyte at a time: this process holds no 50 MB string either.
    writeSync(fd, '{"level":30,"msg":"usage","consumer":"');
    const megabyte = "a".repeat(1024 * 1024);
    for (let i = 0; i < LONG_LINE_MB; i++) writeSync(fd, megabyte);
    writeSync(fd, '"}\n');
  }
  writeSync(fd, `${goodLines(9).join("\n")}\n`);
  closeSync(fd);
  return file;
}

const withLong = writeLog("with-long-line.log", true);
const without = writeLog("without.log", false);

/** The command run on a log, and its peak RSS in MB. */
async function runOn(args: (log: string) => string[], log: string) {
  const rssFile = join(folder, "max-rss");
  const run = await runProgram(["--import", "./test/fixtures/max-rss-at-exit.ts", ...args(log)], {
    env: { MAX_RSS_FILE: rssFile },
    timeoutMs: 60_000,
  });
  return { ...run, peakMb: Number(readFileSync(rssFile, "utf8")) / 1024 };
}

/** Runs the command on both logs: what it printed for the long one, and what the line cost its memory. */
async function compare(args: (log: string) => string[]) {
  const base = await runOn(args, without);
  const long = await runOn(args, withLong);
  return { base, long, growthMb: long.peakMb - base.peakMb };
}

const commands: readonly [string, (log: string) => string[]][] = [
  ["npm run usage", (log) => ["scripts/usage.ts", log]],
  ["npm run deprecation-report", (log) => ["scripts/deprecation-report.ts", "--now", NOW, log]],
  [
    "npm run plan -- --against … --logs",
    (log) => [
      "scripts/plan.ts",
      "--against",
      join(PROJECT_ROOT, "config/openapi.json"),
      "--logs",
      log,
      "--now",
      NOW,
      "--format",
      "json",
    ],
  ],
];

describe(`a log with one ${LONG_LINE_MB} MB line without a newline`, () => {
  for (const [name, args] of commands) {
    test(`${name} reads the lines around it, says it skipped one, and does not hold it`, {
      timeout: 120_000,
    }, async (t) => {
      const { base, long, growthMb } = await compare(args);
      t.diagnostic(
        `peak RSS ${base.peakMb.toFixed(1)} MB without the line, ${long.peakMb.toFixed(1)} MB with it`,
      );
      assert.equal(base.code, 0, base.stderr);
      assert.equal(long.code, 0, long.stderr);
      assert.ok(
        growthMb < GROWTH_LIMIT_MB,
        `peak RSS ${long.peakMb.toFixed(1)} MB against ${base.peakMb.toFixed(1)} MB without the line`,
      );
      if (name === "npm run usage") {
        const report = JSON.parse(long.stdout);
        assert.equal(report.skippedLines, 1);
        assert.equal(report.usageLines, 2);
        assert.equal(report.rows[0].calls, 6);
        assert.match(long.stderr, /2 usage lines in 6 log lines; 1 line longer than 64 KiB skipped/);
      } else if (name === "npm run deprecation-report") {
        assert.match(long.stderr, /2 deprecated calls in 6 log lines; 1 line longer than 64 KiB skipped/);
        assert.equal(JSON.parse(long.stdout).operations[0].callers[0].calls, 2);
      } else {
        const review = JSON.parse(long.stdout);
        assert.equal(review.logs.skippedLines, 1);
        assert.equal(review.logs.calls, 2);
        assert.equal(review.logs.lines, 6);
      }
    });
  }
});

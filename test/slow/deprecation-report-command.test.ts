// The log command as a user runs it: through npm, writing its page with --output (a redirect of
// `npm run` puts npm's banner in the file), whole or not at all; and its page stays readable and its
// memory bounded however many callers the lines name: 100,000 of them made a 237.5 MB page and a
// 1.3 GB process. Timed and heavy, so it runs alone.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parseHTML } from "linkedom";
import { PAGE_CALLERS, PAGE_COMMAND } from "../../policies/lifecycle/deprecation-page.ts";
import { findProgram, runProgram } from "../support/processes.ts";
import { PROJECT_ROOT } from "../support/program.ts";

const CALLERS = 100_000;
/** The heap the command gets: a tenth of what listing every caller took. */
const HEAP_MB = 128;

test(`the page of ${CALLERS} callers lists ${PAGE_CALLERS} and counts them all, within a ${HEAP_MB} MB heap`, {
  timeout: 120_000,
}, async () => {
  const lines = Array.from({ length: CALLERS }, (_, i) =>
    JSON.stringify({
      level: 30,
      msg: "deprecated call",
      operation: "getPet",
      consumer: `consumer-${i}`,
      calledAt: new Date(Date.parse("2030-11-01T00:00:00Z") + i * 1000).toISOString(),
      userAgent: `client/${i}`,
    }),
  );
  const run = await runProgram(
    [
      `--max-old-space-size=${HEAP_MB}`,
      "scripts/deprecation-report.ts",
      "--format",
      "html",
      "--now",
      "2030-11-05T00:00:00Z",
      "--max-callers",
      String(CALLERS),
    ],
    { stdin: `${lines.join("\n")}\n`, timeoutMs: 100_000 },
  );
  assert.equal(run.code, 0, run.stderr.slice(0, 2000));
  assert.ok(run.stdout.length < 1_000_000, `a page of ${run.stdout.length} bytes`);
  const { document } = parseHTML(run.stdout);
  assert.equal(document.querySelector("dd.calls")?.textContent, String(CALLERS));
  assert.equal(document.querySelector("dd.calling")?.textContent, String(CALLERS));
  assert.equal(document.querySelectorAll("table.calling tbody tr").length, PAGE_CALLERS);
  // The most recent first: the last line's caller.
  assert.equal(document.querySelector("table.calling .name")?.textContent, `consumer-${CALLERS - 1}`);
});

const CALL_LINES = ["acme", "globex"].map((consumer, i) =>
  JSON.stringify({
    level: "info",
    time: `2030-11-1${i}T10:00:00.000Z`,
    msg: "deprecated call",
    operation: "getPet",
    consumer,
    calledAt: `2030-11-1${i}T10:00:00.000Z`,
    userAgent: `${consumer}/1`,
  }),
);
const NPM = findProgram("npm");

test("`npm run deprecation-report -- --format html --output page.html` writes the page alone to page.html, where the user is", {
  skip: NPM === undefined ? "no npm on PATH" : false,
}, async () => {
  const user = mkdtempSync(join(tmpdir(), "gw-report-user-"));
  const run = await runProgram(
    ["--prefix", PROJECT_ROOT, "run", ...PAGE_COMMAND.split(" ").slice(2), "--now", "2030-11-20T12:00:00Z"],
    { program: NPM as string, cwd: user, stdin: `${CALL_LINES.join("\n")}\n`, timeoutMs: 60_000 },
  );
  assert.equal(run.code, 0, run.stderr);
  // npm's banner is on stdout, as it always is; the page is not.
  assert.match(run.stdout, /> .*deprecation-report/);
  assert.ok(!run.stdout.includes("<!doctype html>"), "the page went to stdout");
  assert.deepEqual(readdirSync(user), ["page.html"]);
  const page = readFileSync(join(user, "page.html"), "utf8");
  assert.ok(page.startsWith("<!doctype html>\n"), page.slice(0, 200));
  const { document } = parseHTML(page);
  assert.deepEqual(
    [...document.querySelectorAll("table.calling .name")].map((name) => name.textContent),
    ["globex", "acme"],
  );
  // The footer shows the very command this test ran.
  assert.equal(document.querySelector("footer code")?.textContent, PAGE_COMMAND);
  assert.match(run.stderr, /2 deprecated calls in 2 log lines, written to .*page\.html/);
});

test("--output that cannot be written fails with exit 1 and a message, no stack, leaving nothing behind", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-report-out-"));
  // A directory where the file should go: the rename fails.
  const target = join(dir, "page.html");
  mkdirSync(target);
  const run = await runProgram(["scripts/deprecation-report.ts", "--format", "html", "--output", target], {
    stdin: `${CALL_LINES.join("\n")}\n`,
  });
  assert.equal(run.code, 1);
  assert.equal(run.stdout, "");
  assert.match(run.stderr, /^deprecation-report: cannot write .*page\.html: /);
  assert.ok(!run.stderr.includes("    at "), "a stack trace");
  assert.deepEqual(readdirSync(dir), ["page.html"], "a temporary file was left behind");
  assert.deepEqual(readdirSync(target), []);
});

// The log command's page for the API owner stays readable and its memory bounded however many
// callers the lines name: 100,000 of them made a 237.5 MB page and a 1.3 GB process. Timed and
// heavy, so it runs alone.
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseHTML } from "linkedom";
import { PAGE_CALLERS } from "../../policies/lifecycle/deprecation-page.ts";
import { runProgram } from "../support/processes.ts";

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

// The usage of a whole fleet, from the logs the user already aggregates: every replica writes
// "usage" lines (policies/usage), the calls since its last ones, so the lines of all of them
// merged give what no single process's /usage can.
//
//   kubectl logs -l app.kubernetes.io/name=petstore-gateway --tail=-1 --since=168h | npm run -s usage
//   npm run usage -- gateway.log [more.log ...] --output usage.json
import { parseArgs } from "node:util";
import { UsageTally } from "../policies/usage/usage-log-lines.ts";
import { LogLineReader, logChunks, skippedLinesText } from "../src/log-lines.ts";
import { fromUserDirectory } from "../src/project-files.ts";
import { writeFileAtomically } from "../src/write-file-atomically.ts";

/** Rows held: a hundred thousand (consumer, operation) pairs in some tens of megabytes. */
const DEFAULT_MAX_ROWS = 100_000;

const USAGE = `usage: usage [--output <file>] [--max-rows <n>] [file ...]
Reads gateway log lines (JSON, one per line; a prefix before the JSON is ignored) from the files
or, without any (or with -), from stdin, and prints, as JSON, per consumer and operation: the
calls, first and last seen, the query parameters and enum values sent and the statuses received.
A line longer than 64 KiB is not the gateway's: it is skipped, unread, and counted (skippedLines).
  --output    write to this file (whole or not at all) instead of stdout
  --max-rows  (consumer, operation) rows kept, the least recently read dropped past it and
              counted as forgotten (default ${DEFAULT_MAX_ROWS})`;

async function main(): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse();
  } catch (error) {
    process.stderr.write(`usage: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const maxRows = Number(values["max-rows"] ?? DEFAULT_MAX_ROWS);
  if (!Number.isInteger(maxRows) || maxRows < 1) {
    process.stderr.write("usage: --max-rows must be a whole number above 0\n");
    return 2;
  }
  const tally = new UsageTally(maxRows);
  let lines = 0;
  let usageLines = 0;
  const reader = new LogLineReader();
  for (const source of positionals.length === 0 ? ["-"] : positionals) {
    const input = logChunks(source === "-" ? source : fromUserDirectory(source));
    try {
      for await (const line of reader.lines(input)) {
        lines++;
        if (tally.readLine(line)) usageLines++;
      }
    } catch (error) {
      process.stderr.write(`usage: cannot read ${source}: ${(error as Error).message}\n`);
      return 2;
    }
  }
  const skippedLines = reader.skipped;
  const body = `${JSON.stringify({ lines, skippedLines, usageLines, forgotten: tally.forgotten, rows: tally.rows() }, null, 2)}\n`;
  if (values.output === undefined) process.stdout.write(body);
  else await writeFileAtomically(fromUserDirectory(values.output), body);
  const skipped = skippedLines === 0 ? "" : `; ${skippedLinesText(skippedLines)}`;
  process.stderr.write(`usage: ${usageLines} usage lines in ${lines} log lines${skipped}\n`);
  return 0;
}

function parse() {
  return parseArgs({
    allowPositionals: true,
    options: {
      output: { type: "string", short: "o" },
      "max-rows": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`usage: ${(error as Error).message}\n`);
    process.exitCode = 1;
  },
);

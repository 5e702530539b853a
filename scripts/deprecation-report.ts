// The deprecation report of a whole fleet, from the logs the user already aggregates: every
// replica writes one "deprecated call" line per call, so the lines of all of them give the answer
// no single process's /deprecations can. Same shape and figures as the ops report.
//
//   npm run deprecation-report -- gateway.log [more.log ...]     # or lines on stdin
//   kubectl logs -l app.kubernetes.io/name=petstore-gateway --tail=-1 --since=720h | npm run deprecation-report -- --format csv --output callers.csv
//   kubectl logs -l app.kubernetes.io/name=petstore-gateway --tail=-1 --since=720h | npm run deprecation-report -- --format html --output page.html
//
// --output, not `> file`: npm prints its own banner on stdout before the script runs, so a
// redirect without `-s` put "> petstore-gateway@… deprecation-report" at the top of the page.
import { parseArgs } from "node:util";
import policies from "../policies/index.ts";
import { DailyCalls, LogSpan, lineTime, recordLogLine } from "../policies/lifecycle/deprecation-log-lines.ts";
import {
  DEFAULT_QUIET_DAYS,
  pageReport,
  quietAsOf,
  renderDeprecationPage,
} from "../policies/lifecycle/deprecation-page.ts";
import { CallerTally } from "../policies/lifecycle/deprecation-report.ts";
import { reportToCsv } from "../policies/lifecycle/deprecation-report-formats.ts";
import lifecycle, { deprecationFacts, readLifecycle } from "../policies/lifecycle/index.ts";
import responseContract from "../policies/response-contract/index.ts";
import { ViolationTally } from "../policies/response-contract/violation-log-lines.ts";
import { loadConfigForCommand } from "../src/config.ts";
import { LogLineReader, logChunks, skippedLinesText } from "../src/log-lines.ts";
import { loadApiDescription } from "../src/openapi.ts";
import { optionsOf } from "../src/policy-registry.ts";
import { fromUserDirectory } from "../src/project-files.ts";
import { writeFileAtomically } from "../src/write-file-atomically.ts";

const USAGE = `usage: deprecation-report [--format json|csv|html] [--output <file>] [--now <ISO date>] [--max-callers <n>] [--openapi <file>] [--config <file>] [file ...]
Reads gateway log lines (JSON, one per line; a prefix before the JSON is ignored) from the files
or, without any (or with -), from stdin, and prints who called each deprecated operation. A line
longer than 64 KiB is not the gateway's: it is skipped, unread, and counted on stderr.
  --format      json (default), csv, or html: one self-contained page for the API owner
  --output      write the report to this file (whole or not at all: a temporary file beside it,
                renamed over it) instead of stdout, which npm's own banner shares
  --quiet-days  html: a consumer with no call in this many days before the logs end shows as quiet
                since its last call (default 14)
  --now         the instant days-to-sunset is counted from (default: now); quiet and the day bars
                count back from the logs' last instant, or from --now if that is earlier
  --max-callers (operation, consumer) rows kept, the least recently read dropped past it and
                counted as forgotten (default: the config's policies.lifecycle.maxTrackedCallers)
  --openapi     the OpenAPI description that marks the deprecations (default: the config's openapi,
                OPENAPI_FILE or config/openapi.json)
  --config      the gateway config, whose policies.lifecycle.operations may date them (default:
                GATEWAY_CONFIG or config/gateway.json)`;

async function main(): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse();
  } catch (error) {
    process.stderr.write(`deprecation-report: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const format = values.format ?? "json";
  if (format !== "json" && format !== "csv" && format !== "html") {
    process.stderr.write(`deprecation-report: --format must be json, csv or html\n`);
    return 2;
  }
  // From where the user typed the command: npm runs scripts from the project's root.
  const output = values.output === undefined ? undefined : fromUserDirectory(values.output);
  const quietDays = Number(values["quiet-days"] ?? DEFAULT_QUIET_DAYS);
  if (!Number.isInteger(quietDays) || quietDays < 0) {
    process.stderr.write(`deprecation-report: --quiet-days must be a whole number of days\n`);
    return 2;
  }
  const now = values.now === undefined ? Date.now() : Date.parse(values.now);
  if (Number.isNaN(now)) {
    process.stderr.write(`deprecation-report: --now ${values.now} is not a date\n`);
    return 2;
  }
  // The dates as the gateway has them: the document's extension merged with the config's, by the same function.
  const { config } = loadConfigForCommand(policies, { file: values.config, openapi: values.openapi });
  const api = loadApiDescription(config.openapi, { basePath: config.basePath });
  const { deprecations } = readLifecycle(api, optionsOf(config, lifecycle)?.operations);
  const facts = [...deprecations.values()].map((d) => deprecationFacts(d, api.basePath));

  // Memory is bounded by the rows kept, however many callers the lines name: 100,000 of them made
  // a 237.5 MB page and a 1.3 GB process when every one was kept and listed.
  const maxCallers = Number(values["max-callers"] ?? optionsOf(config, lifecycle)?.maxTrackedCallers);
  if (!Number.isInteger(maxCallers) || maxCallers < 1) {
    process.stderr.write(`deprecation-report: --max-callers must be a whole number above 0\n`);
    return 2;
  }
  const tally = new CallerTally(maxCallers);
  // The page's extras: the day bars and the contract violations of the same lines.
  const daily = format === "html" ? new DailyCalls(now, maxCallers) : undefined;
  const violations = format === "html" ? new ViolationTally() : undefined;
  // The logs' own range: a consumer is quiet as of their end, however long before --now that is.
  const span = new LogSpan();
  let lines = 0;
  let calls = 0;
  const sources = positionals.length === 0 ? ["-"] : positionals;
  const reader = new LogLineReader();
  for (const source of sources) {
    const input = logChunks(source === "-" ? source : fromUserDirectory(source));
    for await (const line of reader.lines(input)) {
      lines++;
      const written = lineTime(line);
      if (written !== undefined) {
        span.see(written);
        daily?.see(written);
      }
      const calledAt = recordLogLine(tally, line, daily);
      if (calledAt !== undefined) {
        calls++;
        span.see(calledAt);
      } else violations?.recordLogLine(line);
    }
  }
  const report = tally.report(facts, now);
  let body: string;
  if (format === "html") {
    const logs = span.view();
    body = renderDeprecationPage({
      report: await pageReport(report, { days: quietDays, asOf: quietAsOf(report.generatedAt, logs) }),
      scope: { kind: "fleet", logLines: lines, skippedLines: reader.skipped, logs },
      ...(daily && { daily: daily.view() }),
      // As many recent kinds per operation as /contract/violations keeps.
      ...(violations && {
        violations: violations.report(optionsOf(config, responseContract)?.recentPerOperation ?? 0),
      }),
    });
  } else {
    body = format === "csv" ? reportToCsv(report) : `${JSON.stringify(report, null, 2)}\n`;
  }
  if (output === undefined) process.stdout.write(body);
  else {
    try {
      await writeFileAtomically(output, body);
    } catch (error) {
      process.stderr.write(`deprecation-report: cannot write ${output}: ${(error as Error).message}\n`);
      return 1;
    }
  }
  const skipped = reader.skipped === 0 ? "" : `; ${skippedLinesText(reader.skipped)}`;
  process.stderr.write(
    `deprecation-report: ${calls} deprecated calls in ${lines} log lines${skipped}${output === undefined ? "" : `, written to ${output}`}\n`,
  );
  return 0;
}

function parse() {
  return parseArgs({
    allowPositionals: true,
    options: {
      format: { type: "string" },
      output: { type: "string", short: "o" },
      now: { type: "string" },
      "quiet-days": { type: "string" },
      "max-callers": { type: "string" },
      openapi: { type: "string" },
      config: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`deprecation-report: ${(error as Error).message}\n`);
    process.exitCode = 1;
  },
);

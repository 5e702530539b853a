// What the gateway will enforce with a document and a config, printed without starting anything:
// built by the functions start-up runs (planForCommand: loadConfig, loadApiDescription, planGateway
// and each policy's plan), so it refuses what start-up refuses, with the same one line.
//
//   npm run plan
//   npm run plan -- --openapi their-openapi.json --config gateway.json --format json
//
// With --against, the change review instead: every difference between the running document and
// a candidate, and from the access lines of --logs, which consumers each breaking change hits.
//
//   npm run plan -- --against candidate.json --logs gateway.log --days 7 --format markdown
import { isAbsolute, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import policies from "../policies/index.ts";
import { usageRowOf } from "../policies/usage/usage-log-lines.ts";
import { ChangeReviewer, reviewExitCode } from "../src/change-review.ts";
import { reviewJson, reviewMarkdown, reviewText } from "../src/change-review-text.ts";
import { loadConfigForCommand } from "../src/config.ts";
import { compareDocuments } from "../src/document-diff.ts";
import { LogLineReader, logChunks } from "../src/log-lines.ts";
import { loadApiDescription } from "../src/openapi.ts";
import { planForCommand } from "../src/plan.ts";
import { planJson, planText } from "../src/plan-text.ts";
import { fromUserDirectory } from "../src/project-files.ts";
import { StartupError } from "../src/startup-errors.ts";

/** A month: a consumer that calls once a month (a billing run) is still seen. */
const DEFAULT_DAYS = 30;
/** Per breaking change: the review's memory stays bounded whatever the logs name. */
const DEFAULT_MAX_CONSUMERS = 10_000;

const USAGE = `usage: plan [--openapi <file>] [--config <file>] [--format text|json] [--now <ISO date>]
       plan --against <candidate> [--logs <file or -> ...] [--days <n>] [--format text|json|markdown]
Prints what the gateway will enforce: public operations first, then each operation with the key
it needs, its parameters, request body, response rules, deprecation and stability, and everything
the document asks for that the gateway does not enforce as written. Exits 1, with the line the
gateway would print, when it would refuse to start.
  --openapi  the OpenAPI description (default: the config's openapi, OPENAPI_FILE or config/openapi.json)
  --config   the gateway config (default: GATEWAY_CONFIG or config/gateway.json)
  --format   text (default) or json
  --now      the instant days to a sunset are counted from (default: now)
The change review (--against): every difference between the running document (--openapi or the
config's) and the candidate, breaking ones first, each breaking one with the consumers whose
logged calls it breaks. Exits 0 when nothing used breaks, 1 when something used breaks (or
something breaks and no --logs were given), 2 when a document or a log file cannot be read.
  --against        the candidate OpenAPI description
  --logs           gateway log files (JSON lines; - for stdin); more files may follow as arguments;
                   a line longer than 64 KiB is skipped, unread, and counted
  --days           the days of logs before --now that count (default ${DEFAULT_DAYS})
  --max-consumers  consumers kept per breaking change, the least recently seen forgotten past it
                   and counted (default ${DEFAULT_MAX_CONSUMERS})
  --format         text (default), json or markdown (a pull request comment)`;

async function main(): Promise<number> {
  let values: ReturnType<typeof parse>["values"];
  let positionals: string[];
  try {
    ({ values, positionals } = parse());
  } catch (error) {
    process.stderr.write(`plan: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.against !== undefined) return review(values, positionals);
  if (positionals.length > 0 || values.logs !== undefined) {
    process.stderr.write("plan: log files are read by the change review only (--against)\n");
    return 2;
  }
  const format = values.format ?? "text";
  if (format !== "text" && format !== "json") {
    process.stderr.write("plan: --format must be text or json\n");
    return 2;
  }
  const now = values.now === undefined ? Date.now() : Date.parse(values.now);
  if (Number.isNaN(now)) {
    process.stderr.write(`plan: --now ${values.now} is not a date\n`);
    return 2;
  }
  try {
    const { plan, config, configFile } = planForCommand(
      policies,
      { file: values.config, openapi: values.openapi },
      () => now,
    );
    const sources = { openapi: shown(config.openapi), config: shown(configFile) };
    process.stdout.write(format === "json" ? planJson(plan, sources) : planText(plan, sources));
    return 0;
  } catch (error) {
    if (!(error instanceof StartupError)) throw error;
    // The very line the gateway prints when it refuses to start.
    process.stderr.write(`petstore-gateway: ${error.message}\n`);
    return 1;
  }
}

type Values = ReturnType<typeof parse>["values"];

async function review(values: Values, positionals: readonly string[]): Promise<number> {
  const format = values.format ?? "text";
  if (format !== "text" && format !== "json" && format !== "markdown") {
    process.stderr.write("plan: --format must be text, json or markdown\n");
    return 2;
  }
  const now = values.now === undefined ? Date.now() : Date.parse(values.now);
  const days = Number(values.days ?? DEFAULT_DAYS);
  const maxConsumers = Number(values["max-consumers"] ?? DEFAULT_MAX_CONSUMERS);
  if (Number.isNaN(now)) {
    process.stderr.write(`plan: --now ${values.now} is not a date\n`);
    return 2;
  }
  if (!Number.isInteger(days) || days < 1) {
    process.stderr.write("plan: --days must be a whole number of days above 0\n");
    return 2;
  }
  if (!Number.isInteger(maxConsumers) || maxConsumers < 1) {
    process.stderr.write("plan: --max-consumers must be a whole number above 0\n");
    return 2;
  }
  const against = values.against as string;
  let reviewer: ChangeReviewer;
  let running: string;
  try {
    const { config } = loadConfigForCommand(policies, { file: values.config, openapi: values.openapi });
    running = config.openapi;
    const api = loadApiDescription(config.openapi, { basePath: config.basePath });
    // The candidate as a reload would read it: under the config's base path.
    const candidate = loadApiDescription(fromUserDirectory(against), { basePath: config.basePath });
    reviewer = new ChangeReviewer({
      running: { name: shown(running), api },
      candidate: { name: shown(fromUserDirectory(against)), api: candidate },
      // With the running config: a sunset it gives is compared too.
      differences: compareDocuments(api, candidate, { policies, options: config.policies }),
      now,
      days,
      maxConsumers,
    });
  } catch (error) {
    if (!(error instanceof StartupError)) throw error;
    process.stderr.write(`plan: ${error.message}\n`);
    return 2;
  }
  const sources = [...(values.logs ?? []), ...positionals];
  const reader = new LogLineReader();
  for (const source of sources) {
    reviewer.markLogsGiven();
    const input = logChunks(source === "-" ? source : fromUserDirectory(source));
    try {
      for await (const line of reader.lines(input)) {
        // A usage line (policies/usage) says a consumer's use in one line; others may be access lines.
        const usage = usageRowOf(line);
        if (usage === undefined) reviewer.readLine(line);
        else reviewer.readUsage({ ...usage, lastSeen: Date.parse(usage.lastSeen) });
      }
    } catch (error) {
      process.stderr.write(`plan: cannot read the logs ${source}: ${(error as Error).message}\n`);
      return 2;
    }
  }
  reviewer.skippedLines(reader.skipped);
  const result = reviewer.review();
  process.stdout.write(
    format === "json"
      ? reviewJson(result)
      : format === "markdown"
        ? reviewMarkdown(result)
        : reviewText(result),
  );
  return reviewExitCode(result);
}

/** A path as the user would type it: relative to their directory when inside it. */
function shown(file: string): string {
  const path = relative(fromUserDirectory("."), resolve(file));
  return path.startsWith("..") || isAbsolute(path) ? file : path;
}

function parse() {
  return parseArgs({
    allowPositionals: true,
    options: {
      against: { type: "string" },
      logs: { type: "string", multiple: true },
      days: { type: "string" },
      "max-consumers": { type: "string" },
      openapi: { type: "string" },
      config: { type: "string" },
      format: { type: "string" },
      now: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`plan: ${(error as Error).message}\n`);
    process.exitCode = 2;
  },
);

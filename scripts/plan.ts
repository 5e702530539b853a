// What the gateway will enforce with a document and a config, printed without starting anything:
// built by the functions start-up runs (planForCommand: loadConfig, loadApiDescription, planGateway
// and each policy's plan), so it refuses what start-up refuses, with the same one line.
//
//   npm run plan
//   npm run plan -- --openapi their-openapi.json --config gateway.json --format json
import { isAbsolute, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import policies from "../policies/index.ts";
import { planForCommand } from "../src/plan.ts";
import { planJson, planText } from "../src/plan-text.ts";
import { fromUserDirectory } from "../src/project-files.ts";
import { StartupError } from "../src/startup-errors.ts";

const USAGE = `usage: plan [--openapi <file>] [--config <file>] [--format text|json] [--now <ISO date>]
Prints what the gateway will enforce: public operations first, then each operation with the key
it needs, its parameters, request body, response rules, deprecation and stability, and everything
the document asks for that the gateway does not enforce as written. Exits 1, with the line the
gateway would print, when it would refuse to start.
  --openapi  the OpenAPI description (default: the config's openapi, OPENAPI_FILE or config/openapi.json)
  --config   the gateway config (default: GATEWAY_CONFIG or config/gateway.json)
  --format   text (default) or json
  --now      the instant days to a sunset are counted from (default: now)`;

function main(): number {
  let values: ReturnType<typeof parse>["values"];
  try {
    values = parse().values;
  } catch (error) {
    process.stderr.write(`plan: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
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

/** A path as the user would type it: relative to their directory when inside it. */
function shown(file: string): string {
  const path = relative(fromUserDirectory("."), resolve(file));
  return path.startsWith("..") || isAbsolute(path) ? file : path;
}

function parse() {
  return parseArgs({
    options: {
      openapi: { type: "string" },
      config: { type: "string" },
      format: { type: "string" },
      now: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

process.exitCode = main();

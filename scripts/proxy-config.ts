// Prints the config of a proxy that asks the gateway in decision mode about every request,
// generated from the same document, config and policies the gateway starts with.
//
//   npm run proxy-config -- nginx --decision-url http://127.0.0.1:9000 --upstream-url http://pets:3000/v1 --output nginx.conf
import { parseArgs } from "node:util";
import policies from "../policies/index.ts";
import { loadConfig } from "../src/config.ts";
import { HAPROXY_LUA_FILE } from "../src/decision/haproxy-config.ts";
import { contractOf, GENERATORS } from "../src/decision/proxy-config.ts";
import { fromUserDirectory } from "../src/project-files.ts";
import { StartupError } from "../src/startup-errors.ts";
import { writeFileAtomically } from "../src/write-file-atomically.ts";

const PROXIES = Object.keys(GENERATORS);
const USAGE = `usage: proxy-config <${PROXIES.join("|")}> --decision-url URL --upstream-url URL [--listen PORT] [--timeout-ms MS] [--lua-file PATH] [--output FILE]
Prints a complete config for the proxy, made from the gateway's document and config (GATEWAY_CONFIG,
OPENAPI_FILE, API_KEYS_FILE as for npm start): the proxy asks the gateway (GATEWAY_MODE=decision) at
--decision-url whether to let each request through, then forwards it to --upstream-url (the backend
with its base path, as UPSTREAM_URL).
  --listen      the port the proxy listens on (default 8080)
  --timeout-ms  how long the proxy waits for a decision before it answers 5xx (default 1000)
  --lua-file    haproxy: where its config loads deploy/haproxy/gateway-decide.lua from
                (default ${HAPROXY_LUA_FILE})
  --output      write the config to this file (whole or not at all), relative to where you typed the
                command, instead of stdout: npm's own banner goes to stdout, so \`npm run proxy-config
                > file\` without npm's -s starts the file with a line the proxy refuses`;

async function main(): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse();
  } catch (error) {
    process.stderr.write(`proxy-config: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const proxy = positionals[0] ?? "";
  const generate = GENERATORS[proxy];
  const listen = Number(values.listen ?? "8080");
  const timeoutMs = Number(values["timeout-ms"] ?? "1000");
  const problem =
    generate === undefined
      ? `the proxy must be one of ${PROXIES.join(", ")}`
      : values["decision-url"] === undefined || values["upstream-url"] === undefined
        ? "--decision-url and --upstream-url are required"
        : !Number.isInteger(listen) || listen < 1 || listen > 65_535
          ? "--listen must be a port number"
          : !Number.isInteger(timeoutMs) || timeoutMs < 1
            ? "--timeout-ms must be a positive whole number"
            : undefined;
  if (problem !== undefined || generate === undefined) {
    process.stderr.write(`proxy-config: ${problem}\n${USAGE}\n`);
    return 2;
  }
  try {
    const config = loadConfig({ policies, overrides: { mode: "decision" } });
    const contract = await contractOf(config, policies);
    const text = generate(contract, {
      decisionUrl: values["decision-url"] as string,
      upstreamUrl: values["upstream-url"] as string,
      listenPort: listen,
      timeoutMs,
      ...(values["lua-file"] === undefined ? {} : { luaFile: values["lua-file"] }),
    });
    if (values.output === undefined) {
      process.stdout.write(text);
      return 0;
    }
    const output = fromUserDirectory(values.output);
    try {
      await writeFileAtomically(output, text);
    } catch (error) {
      process.stderr.write(`proxy-config: cannot write ${output}: ${(error as Error).message}\n`);
      return 1;
    }
    process.stderr.write(`proxy-config: ${proxy}'s config written to ${output}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof StartupError) && !(error instanceof TypeError)) throw error;
    process.stderr.write(`proxy-config: ${(error as Error).message}\n`);
    return 1;
  }
}

function parse() {
  return parseArgs({
    allowPositionals: true,
    options: {
      "decision-url": { type: "string" },
      "upstream-url": { type: "string" },
      listen: { type: "string" },
      "timeout-ms": { type: "string" },
      "lua-file": { type: "string" },
      output: { type: "string", short: "o" },
      help: { type: "boolean", short: "h" },
    },
  });
}

process.exitCode = await main();

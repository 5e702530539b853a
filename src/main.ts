// The program behind `npm start` and the Docker image, and the one place that composes the gateway:
// the policy list -> load config -> choose the upstream (or the demo) -> serve, in this one process
// (WORKERS=1) or as the primary of WORKERS worker processes.
import cluster from "node:cluster";
import auth from "../policies/auth/index.ts";
import policies from "../policies/index.ts";
import { runPrimary, workerCount } from "./cluster/primary.ts";
import { runWorker } from "./cluster/worker.ts";
import { loadConfig } from "./config.ts";
import { type DemoSetup, startDemo } from "./demo.ts";
import { createLogger } from "./logger.ts";
import type { ApiDescription } from "./openapi.ts";
import { optionsOf } from "./policy-registry.ts";
import { logListening, type ProcessSetup, serve } from "./serve.ts";
import { StartupError } from "./startup-errors.ts";
import { tracingSettings } from "./tracing/settings.ts";
import { chooseUpstream, type UpstreamChoice } from "./upstream-choice.ts";

async function main(): Promise<void> {
  // A worker gets its whole setup from the primary, the demo backend's address included.
  if (cluster.isWorker) return runWorker(policies);
  let config = loadConfig({ policies });
  // Refused here, before any worker starts: an OTEL_* variable the gateway cannot honour (gRPC).
  tracingSettings(process.env);
  // In decision mode the proxy in front forwards: there is no upstream, and no demo to front.
  const choice: UpstreamChoice =
    config.mode === "decision"
      ? { kind: "configured", url: "", environment: config.environment ?? "production" }
      : chooseUpstream(config);
  let demo: DemoSetup | undefined;
  if (choice.kind === "demo") {
    // Once per machine, in the primary: every worker proxies to it and shares its key file.
    // A key file given by API_KEYS_FILE or by the config file is used as it is; only without one is a key generated.
    demo = await startDemo({ keysFileGiven: optionsOf(config, auth)?.keysFile !== undefined });
    config = loadConfig({ policies, env: { ...process.env, ...demo.env } });
  }
  const setup: ProcessSetup =
    choice.kind === "demo"
      ? { policies, config, upstreamUrl: (demo as DemoSetup).upstreamUrl, environment: "demo" }
      : { policies, config, upstreamUrl: choice.url, environment: choice.environment };
  const workers = workerCount(config.workers);
  // With workers, the primary shares stdout with them; alone, this process has it to itself.
  const log = createLogger(config.log.level, undefined, { sharedStdout: workers > 1 });
  const onStopped = async () => {
    await demo?.close();
  };
  const announce = (port: number, opsPort: number, api: ApiDescription) => {
    if (!demo) return;
    const key = `-H 'Authorization: Bearer ${demo.apiKey ?? "<a key from your key file>"}' `;
    // The path to try comes from the document: its first GET that needs no path parameter.
    const path = api.operations.find((o) => o.method === "GET" && o.pathParameters.length === 0)?.path ?? "";
    process.stderr.write(
      `petstore-gateway in front of the demo backend. Try: curl -s ${key}http://localhost:${port}${api.basePath}${path}  (metrics: http://localhost:${opsPort}/metrics)\n`,
    );
  };

  if (workers > 1) return runPrimary({ setup, workers, log, onListening: announce, onStopped });
  const serving = await serve(setup, { log, ops: true, onStopped });
  const opsPort = serving.opsPort as number;
  logListening(log, setup, { port: serving.port, opsPort, workers: 1 });
  announce(serving.port, opsPort, serving.gateway.api);
}

main().catch((error: unknown) => {
  // One line naming the problem: a bad config field, a broken description, a busy port. Node's
  // own system errors ("connect ECONNREFUSED ...") say theirs too; anything else is a bug, with its stack.
  const known =
    error instanceof StartupError || typeof (error as NodeJS.ErrnoException)?.syscall === "string";
  process.stderr.write(
    `petstore-gateway: ${known ? (error as Error).message : String((error as Error)?.stack ?? error)}\n`,
  );
  process.exit(1);
});

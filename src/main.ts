// The program behind `npm start` and the Docker image: load config -> choose the upstream (or the
// demo) -> build the gateway -> listen -> shut down gracefully.
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import policies from "../policies/index.ts";
import { ConfigError, type GatewayConfig, loadConfig } from "./config.ts";
import { type DemoSetup, startDemo } from "./demo.ts";
import { buildGateway } from "./gateway.ts";
import { createLogger } from "./logger.ts";
import { ApiDescriptionError } from "./openapi.ts";
import { chooseUpstream } from "./upstream-choice.ts";

async function main(): Promise<void> {
  let config: GatewayConfig = loadConfig({ policies });
  const choice = chooseUpstream(config);
  let demo: DemoSetup | undefined;
  if (choice.kind === "demo") {
    demo = await startDemo({ keysFileGiven: Boolean(process.env.API_KEYS_FILE) });
    config = loadConfig({ policies, env: { ...process.env, ...demo.env } });
  }
  const { logger, flush } = createLogger(config.log.level);
  const { gateway, server, opsServer } = buildGateway({
    config,
    policies,
    upstreamUrl: demo ? demo.upstreamUrl : (choice as { url: string }).url,
    environment: demo ? "demo" : (choice as { environment: string }).environment,
    logger,
  });
  server.listen(config.port, config.host);
  opsServer.listen(config.opsPort, config.opsHost);
  await Promise.all([once(server, "listening"), once(opsServer, "listening")]);
  const port = (server.address() as AddressInfo).port;
  const opsPort = (opsServer.address() as AddressInfo).port;
  logger.info(
    {
      port,
      opsPort,
      environment: demo ? "demo" : choice.kind === "configured" ? choice.environment : undefined,
    },
    "gateway listening",
  );
  if (demo) {
    const key = demo.apiKey ? `-H 'Authorization: Bearer ${demo.apiKey}' ` : "";
    process.stderr.write(
      `petstore-gateway in front of the demo backend. Try: curl -s ${key}http://localhost:${port}/v1/pets  (metrics: http://localhost:${opsPort}/metrics)\n`,
    );
  }

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      // A second signal means now.
      flush();
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal, drainMs: config.server.shutdownDrainMs }, "shutting down");
    gateway.drain();
    const deadline = setTimeout(() => {
      logger.warn("shutdown deadline reached; exiting with requests still open");
      flush();
      process.exit(1);
    }, config.server.shutdownTimeoutMs);
    deadline.unref();
    // Load balancers take a moment to see readiness go false: keep serving meanwhile.
    setTimeout(() => {
      server.close(async () => {
        opsServer.close();
        opsServer.closeAllConnections();
        await gateway.close();
        await demo?.close();
        logger.info("stopped");
        flush();
        process.exit(0);
      });
      server.closeIdleConnections();
    }, config.server.shutdownDrainMs).unref();
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

main().catch((error: unknown) => {
  // One line naming the problem: a bad config field, a broken description, a busy port.
  const known = error instanceof ConfigError || error instanceof ApiDescriptionError;
  process.stderr.write(
    `petstore-gateway: ${known ? (error as Error).message : String((error as Error)?.stack ?? error)}\n`,
  );
  process.exit(1);
});

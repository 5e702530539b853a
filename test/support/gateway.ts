// A real gateway in the test's own process, listening on port 0, with its pino lines captured.
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import type { GatewayConfig } from "../../src/config-schema.ts";
import { buildGateway, type Gateway } from "../../src/gateway.ts";
import { createLogger } from "../../src/logger.ts";
import type { AnyPolicyDefinition } from "../../src/policy-registry.ts";
import type { TracingSettings } from "../../src/tracing/index.ts";
import { loadTracing } from "../../src/tracing/load.ts";
import { LogCapture } from "./log-capture.ts";
import { type BackendProcess, startDemoBackendProcess } from "./processes.ts";

export { LogCapture };

export interface TestGateway {
  readonly url: string; // e.g. http://127.0.0.1:PORT/v1
  readonly origin: string; // http://127.0.0.1:PORT
  readonly opsUrl: string; // http://127.0.0.1:OPSPORT
  readonly gateway: Gateway;
  readonly config: GatewayConfig;
  readonly logs: LogCapture;
  close(): Promise<void>;
}

export interface StartGatewayOptions {
  readonly upstreamUrl: string;
  /** Partial config, validated like a config file. */
  readonly config?: Record<string, unknown>;
  readonly policies?: readonly AnyPolicyDefinition[];
  readonly environment?: string;
  readonly now?: () => number;
  /** Export spans (as OTEL_* variables would set it). */
  readonly tracing?: TracingSettings;
}

export async function startGateway(options: StartGatewayOptions): Promise<TestGateway> {
  const config = validateConfig({ port: 0, opsPort: 0, ...options.config }, options.policies ?? policies);
  const logs = new LogCapture();
  // The gateway's own logger configuration (redaction included), writing into the capture.
  const { logger } = createLogger(config.log.level, logs);
  if (options.tracing) await loadTracing();
  const built = buildGateway({
    config,
    policies: options.policies ?? policies,
    upstreamUrl: options.upstreamUrl,
    environment: options.environment ?? "production",
    logger,
    ...(options.now ? { now: options.now } : {}),
    ...(options.tracing ? { tracing: options.tracing } : {}),
  });
  built.server.listen(0, "127.0.0.1");
  built.opsServer.listen(0, "127.0.0.1");
  await Promise.all([once(built.server, "listening"), once(built.opsServer, "listening")]);
  const port = (built.server.address() as AddressInfo).port;
  const opsPort = (built.opsServer.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    url: `${origin}${built.gateway.api.basePath}`,
    origin,
    opsUrl: `http://127.0.0.1:${opsPort}`,
    gateway: built.gateway,
    config,
    logs,
    async close() {
      built.server.closeAllConnections();
      built.opsServer.closeAllConnections();
      await Promise.all([
        new Promise((done) => built.server.close(done)),
        new Promise((done) => built.opsServer.close(done)),
      ]);
      await built.gateway.close();
    },
  };
}

/** An in-process gateway with a demo backend process of its own behind it. */
export interface GatewayOnDemoBackend extends TestGateway {
  readonly backend: BackendProcess;
}

/** Starts a demo backend process and a gateway in front of it; close() stops both. */
export async function startGatewayOnDemoBackend(
  options: Omit<StartGatewayOptions, "upstreamUrl">,
): Promise<GatewayOnDemoBackend> {
  const backend = await startDemoBackendProcess();
  const gw = await startGateway({ ...options, upstreamUrl: backend.url });
  return {
    ...gw,
    backend,
    async close() {
      await gw.close();
      await backend.close();
    },
  };
}

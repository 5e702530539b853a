// A real gateway for a test, on ports the OS chose on 127.0.0.1, with a key file of its own, and
// closed when the test (or its suite) is over. Two ways to start one, and only these two:
//   startGateway         the gateway in the test's own process, its pino lines captured; in front
//                        of the demo backend (a process of its own) unless the test names a backend
//   startGatewayProgram  the program as `npm start` runs it, a process of its own
//                        (runGatewayProgram: the same program, run to its end, for a start that fails)
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
import { configFileWith } from "./config-file.ts";
import { type KeysFile, writeKeysFile } from "./keys.ts";
import { LogCapture } from "./log-capture.ts";
import {
  type BackendProcess,
  type GatewayProcess,
  type ProgramRun,
  runProgram,
  startDemoBackendProcess,
  startGatewayProcess,
} from "./processes.ts";
import { GATEWAY_PROGRAM } from "./program.ts";

export { LogCapture };

/**
 * What closes a gateway when the test is over: the test's context (`t`), by its `t.after`. A suite
 * that starts one in `before` closes it in its own `after`.
 */
export type Cleanup = { after(fn: () => unknown): void };

/**
 * Whose keys the gateway takes: consumers to write a key file for (["acme"] when absent); a key
 * file written already (one that a suite's gateways share); or false, for none: a test of a start
 * without one, or the program's demo, which makes its own.
 */
export type KeysOption = readonly string[] | KeysFile | false;

export interface TestGateway {
  readonly url: string; // e.g. http://127.0.0.1:PORT/v1
  readonly origin: string; // http://127.0.0.1:PORT
  readonly opsUrl: string; // http://127.0.0.1:OPSPORT
  readonly gateway: Gateway;
  readonly config: GatewayConfig;
  readonly logs: LogCapture;
  /** The key file written for it, with the clear keys; undefined when the test gave its own or none. */
  readonly keys: KeysFile | undefined;
  /** The first consumer's key (throws when the gateway has no key file of the helper's). */
  readonly key: string;
  /** The demo backend process it fronts, when the test named no backend. */
  readonly backend: BackendProcess | undefined;
  /** Stops the gateway, then the demo backend process it started, if any. */
  close(): Promise<void>;
}

export interface StartGatewayOptions {
  /** The backend, with its base path; absent: the demo backend, as a process of its own. */
  readonly upstreamUrl?: string;
  readonly keys?: KeysOption;
  /** Partial config, validated like a config file; the key file goes in as policies.auth.keysFile. */
  readonly config?: Record<string, unknown>;
  readonly policies?: readonly AnyPolicyDefinition[];
  readonly environment?: string;
  readonly now?: () => number;
  /** Export spans (as OTEL_* variables would set it). */
  readonly tracing?: TracingSettings;
}

/**
 * A real gateway in the test's own process, listening on 127.0.0.1, on ports the OS chose, with
 * its pino lines captured; in front of the demo backend process unless `upstreamUrl` names another
 * backend. With `cleanup` it closes when the test is over.
 */
export async function startGateway(
  options?: StartGatewayOptions & { readonly upstreamUrl?: undefined },
  cleanup?: Cleanup,
): Promise<GatewayOnDemoBackend>;
export async function startGateway(options: StartGatewayOptions, cleanup?: Cleanup): Promise<TestGateway>;
export async function startGateway(
  options: StartGatewayOptions = {},
  cleanup?: Cleanup,
): Promise<TestGateway> {
  const keys = keysFor(options.keys, keysFileOf(options.config));
  const chosen = options.policies ?? policies;
  const config = validateConfig({ port: 0, opsPort: 0, ...withKeysFile(options.config ?? {}, keys) }, chosen);
  const logs = new LogCapture();
  // The gateway's own logger configuration (redaction included), writing into the capture.
  const { logger } = createLogger(config.log.level, logs);
  if (options.tracing) await loadTracing();
  const backend = options.upstreamUrl === undefined ? await startDemoBackendProcess() : undefined;
  let built: ReturnType<typeof buildGateway>;
  try {
    built = buildGateway({
      config,
      policies: chosen,
      upstreamUrl: options.upstreamUrl ?? (backend as BackendProcess).url,
      environment: options.environment ?? "production",
      logger,
      ...(options.now ? { now: options.now } : {}),
      ...(options.tracing ? { tracing: options.tracing } : {}),
    });
  } catch (error) {
    await backend?.close();
    throw error;
  }
  built.server.listen(0, "127.0.0.1");
  built.opsServer.listen(0, "127.0.0.1");
  await Promise.all([once(built.server, "listening"), once(built.opsServer, "listening")]);
  const port = (built.server.address() as AddressInfo).port;
  const opsPort = (built.opsServer.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  const started: TestGateway = {
    url: `${origin}${built.gateway.api.basePath}`,
    origin,
    opsUrl: `http://127.0.0.1:${opsPort}`,
    gateway: built.gateway,
    config,
    logs,
    keys,
    get key() {
      return firstKey(keys);
    },
    backend,
    async close() {
      built.server.closeAllConnections();
      built.opsServer.closeAllConnections();
      await Promise.all([
        new Promise((done) => built.server.close(done)),
        new Promise((done) => built.opsServer.close(done)),
      ]);
      await built.gateway.close();
      await backend?.close();
    },
  };
  closeWhenOver(cleanup, () => started.close());
  return started;
}

/** A gateway in front of a demo backend process of its own (startGateway with no upstreamUrl). */
export interface GatewayOnDemoBackend extends TestGateway {
  readonly backend: BackendProcess;
}

/** The gateway program (or a fixture that logs as it does) in a process of its own. */
export interface TestGatewayProgram extends GatewayProcess {
  /** The key file written for it, with the clear keys; undefined when the test gave its own or none. */
  readonly keys: KeysFile | undefined;
  /** The first consumer's key (throws when the program has no key file of the helper's). */
  readonly key: string;
}

export interface GatewayProgramOptions {
  /** UPSTREAM_URL; absent: the program serves its own demo backend, as `npm start` does. */
  readonly upstreamUrl?: string;
  /** Written to a file given as API_KEYS_FILE, unless the environment or the config names one. */
  readonly keys?: KeysOption;
  /**
   * Settings of a config file given as GATEWAY_CONFIG, unless the environment names one: both
   * ports on 127.0.0.1 and no drain at shutdown (the default, 3 s, is for load balancers), then these.
   */
  readonly config?: Record<string, unknown>;
  /** More of the program's environment, over PORT=0, OPS_PORT=0 and what the options above set. */
  readonly env?: Record<string, string>;
  /** Node's arguments: another program that logs as the gateway does (a fixture with a planted fault). */
  readonly program?: readonly string[];
}

/**
 * The gateway program as `npm start` runs it, in a process of its own, on ports the OS chose;
 * resolves once it listens. With `cleanup` it is stopped (SIGTERM) when the test is over.
 */
export async function startGatewayProgram(
  options: GatewayProgramOptions = {},
  cleanup?: Cleanup,
): Promise<TestGatewayProgram> {
  const { env, keys } = programEnvironment(options);
  const started = await startGatewayProcess(env, options.program ?? GATEWAY_PROGRAM);
  closeWhenOver(cleanup, () => started.stop());
  return Object.defineProperties(started as TestGatewayProgram, {
    keys: { value: keys, enumerable: true },
    key: { get: () => firstKey(keys), enumerable: true },
  });
}

/**
 * The gateway program set up as startGatewayProgram does, run to its end (a start that must
 * fail: its exit code and what it wrote); killed, and failed, past 30 s.
 */
export function runGatewayProgram(options: GatewayProgramOptions = {}): Promise<ProgramRun> {
  return runProgram(options.program ?? GATEWAY_PROGRAM, {
    env: { PORT: "0", OPS_PORT: "0", ...programEnvironment(options).env },
  });
}

function programEnvironment(options: GatewayProgramOptions): {
  env: Record<string, string>;
  keys: KeysFile | undefined;
} {
  const given = options.env ?? {};
  const keys = keysFor(options.keys, given.API_KEYS_FILE ?? keysFileOf(options.config));
  const env: Record<string, string> = {};
  if (options.upstreamUrl !== undefined) env.UPSTREAM_URL = options.upstreamUrl;
  if (keys) env.API_KEYS_FILE = keys.file;
  if (!("GATEWAY_CONFIG" in given)) {
    env.GATEWAY_CONFIG = configFileWith(
      { host: "127.0.0.1", opsHost: "127.0.0.1", server: { shutdownDrainMs: 0 } },
      options.config ?? {},
    );
  } else if (options.config !== undefined) {
    throw new Error("config and env.GATEWAY_CONFIG both name the config: give one");
  }
  return { env: { ...env, ...given }, keys };
}

/** The key file to write or share; none when the test names its own file or asks for none. */
function keysFor(option: KeysOption | undefined, givenFile: string | undefined): KeysFile | undefined {
  if (givenFile !== undefined) {
    if (option !== undefined && option !== false)
      throw new Error("keys and a key file of the test's both given: give one");
    return undefined;
  }
  if (option === false) return undefined;
  if (option === undefined) return writeKeysFile(["acme"]);
  return "file" in option ? option : writeKeysFile(option);
}

function keysFileOf(config: Record<string, unknown> | undefined): string | undefined {
  const auth = (config?.policies as Record<string, Record<string, unknown>> | undefined)?.auth;
  return auth?.keysFile as string | undefined;
}

function withKeysFile(config: Record<string, unknown>, keys: KeysFile | undefined): Record<string, unknown> {
  if (keys === undefined) return config;
  const policySettings = (config.policies ?? {}) as Record<string, Record<string, unknown>>;
  return {
    ...config,
    policies: { ...policySettings, auth: { keysFile: keys.file, ...policySettings.auth } },
  };
}

function firstKey(keys: KeysFile | undefined): string {
  if (keys === undefined)
    throw new Error("this gateway has no key file of the helper's: the test gave its own");
  return keys.key;
}

function closeWhenOver(cleanup: Cleanup | undefined, close: () => Promise<unknown>): void {
  cleanup?.after(close);
}

// One serving process: the whole gateway when WORKERS=1, or one cluster worker (whose ops port
// is the primary's). Listens, and shuts down gracefully: readiness goes false, requests keep
// being served through the drain delay, then in-flight ones complete, and the logs are flushed
// before the process exits, since they are the record of deprecated calls.
import type { Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Intake } from "./cluster/intake.ts";
import type { GatewayConfig } from "./config-schema.ts";
import { watchDocumentFiles } from "./document-watch.ts";
import { buildGateway, type Gateway } from "./gateway.ts";
import { listen } from "./listen.ts";
import type { Logger, LoggerHandle } from "./logger.ts";
import { pendingResponse } from "./node-internals.ts";
import type { DocumentSource } from "./openapi/document-source.ts";
import type { AnyPolicyDefinition } from "./policy-registry.ts";
import { shutdownOnSignals } from "./shutdown.ts";
import { loadTracing } from "./tracing/load.ts";
import { tracingSettings } from "./tracing/settings.ts";

/** What a serving process needs: the policies, the validated config and the backend it fronts. */
export interface ProcessSetup {
  /** The ordered policy list, chosen by the composition root (src/main.ts). */
  readonly policies: readonly AnyPolicyDefinition[];
  readonly config: GatewayConfig;
  /** The backend, with its own base path. */
  readonly upstreamUrl: string;
  /** "production", "staging", or "demo". */
  readonly environment: string;
}

export interface ServeOptions {
  readonly log: LoggerHandle;
  /** Open the ops port as well; a cluster worker leaves it to the primary. */
  readonly ops: boolean;
  /** Runs after the servers closed, before the logs are flushed (e.g. stop the demo backend). */
  readonly onStopped?: () => Promise<void>;
  /** Log the plan's warnings at start-up (default true): a cluster's primary does, once, not each worker. */
  readonly startupWarnings?: boolean;
  /** A cluster worker's connections come from its primary (cluster/intake.ts), not from a port of its own. */
  readonly intake?: (server: Server) => Intake;
  /**
   * A cluster worker's document: the files its primary read, compiled as they are. The primary
   * reloads it for every worker at once (cluster/document-commit.ts); such a process does not
   * watch the files, count reloads nor log them.
   */
  readonly document?: DocumentSource;
}

export interface Serving {
  readonly gateway: Gateway;
  readonly port: number;
  readonly opsPort: number | undefined;
  /** Starts the graceful shutdown; calling it again changes nothing. */
  stop(why: string): void;
}

export async function serve(setup: ProcessSetup, options: ServeOptions): Promise<Serving> {
  const { config } = setup;
  const { logger } = options.log;
  const tracing = tracingSettings(process.env);
  // The SDK is imported only when tracing is on (src/tracing/load.ts).
  if (tracing !== undefined) await loadTracing();
  const { gateway, server, opsServer } = buildGateway({
    config,
    policies: setup.policies,
    upstreamUrl: setup.upstreamUrl,
    environment: setup.environment,
    logger,
    // Each process (a cluster's workers too) exports its own spans.
    tracing,
    startupWarnings: options.startupWarnings ?? true,
    ops: options.ops,
    ...(options.document === undefined ? {} : { document: options.document, reportsReloads: false }),
  });
  const intake = options.intake?.(server);
  await Promise.all([
    intake === undefined && listen(server, config, "public"),
    options.ops && listen(opsServer, config, "ops"),
  ]);
  let exitCode = 0;
  // The connections open now: at the deadline, each request still on one is answered or cut, and logged.
  const open = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  });

  const stop = shutdownOnSignals({
    log: options.log,
    deadlineMs: config.server.shutdownTimeoutMs,
    fields: () => ({ drainMs: config.server.shutdownDrainMs }),
    begin() {
      gateway.drain();
      // Load balancers take a moment to see readiness go false: keep serving meanwhile.
      setTimeout(() => {
        // After a stall (a long GC, a full stdout pipe) expired timers run before pending I/O, and
        // a connection already handed to this process (by the kernel, or by a cluster primary)
        // would be refused and reset. Let this turn's I/O in first, then stop accepting.
        setImmediate(() => {
          watch?.close();
          const stopped = () =>
            void closeAndExit(options.ops ? opsServer : undefined, gateway, options, exitCode);
          if (intake) {
            intake.close(stopped);
            server.close();
          } else server.close(stopped);
          server.closeIdleConnections();
        });
      }, config.server.shutdownDrainMs).unref();
    },
    async onDeadline() {
      // Closing what is left below may complete the drain: that exit says the deadline was hit too.
      exitCode = 1;
      // With no connection left the wait was in closing (a document version, the ops token's
      // watch, a span export): saying requests were open would send an operator the wrong way.
      logger.warn(
        { connections: open.size },
        open.size > 0
          ? "shutdown deadline reached; exiting with requests still open"
          : "shutdown deadline reached while closing; no request was open",
      );
      // A request whose answer has not started is answered 503 SHUTTING_DOWN; one under way is
      // cut. Either way its response closes, and with it comes its access line: the process
      // exits once every connection has closed (or a moment later, come what may).
      for (const socket of open) {
        const res = pendingResponse(socket);
        if (res) gateway.endAtDeadline(res);
        else socket.destroy();
      }
      await allClosed(open, DEADLINE_ANSWER_MS);
      for (const socket of open) socket.destroy();
      await allClosed(open, DEADLINE_ANSWER_MS);
    },
  });
  // A cluster primary passes its SIGHUP on as a message (runWorker); one sent to a worker itself
  // reloads that worker's keys, where Node's default would end it. A worker's document is the
  // primary's to reload, for all of them at once (cluster/document-commit.ts).
  const watch = options.document === undefined ? reloadDocumentOnChange(gateway, config, logger) : undefined;
  process.on("SIGHUP", () => {
    void gateway.reload("SIGHUP");
    watch?.reload("SIGHUP");
  });
  exitOnFatalError(options.log);

  return {
    gateway,
    port: intake ? intake.port : (server.address() as AddressInfo).port,
    opsPort: options.ops ? (opsServer.address() as AddressInfo).port : undefined,
    stop,
  };
}

/** The document reloads when its files change (document-watch.ts) or when asked. */
function reloadDocumentOnChange(
  gateway: Gateway,
  config: GatewayConfig,
  logger: Logger,
): { reload(why: string): void; close(): void } {
  const reload = (why: string) => {
    void gateway.document.reload(why).then(() => watch.watch(gateway.document.paths()));
  };
  const watch = watchDocumentFiles({
    debounceMs: config.document.reloadDebounceMs,
    onChange: reload,
    logger,
  });
  watch.watch(gateway.document.paths());
  return { reload, close: () => watch.close() };
}

/** At the deadline, how long an answer written to a request still open may take to go out. */
const DEADLINE_ANSWER_MS = 500;

/** Resolves once every socket in the set has closed, or after `timeoutMs`. */
function allClosed(open: Set<Socket>, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    let left = open.size;
    if (left === 0) {
      clearTimeout(timer);
      return resolve();
    }
    for (const socket of open) {
      socket.once("close", () => {
        if (--left > 0) return;
        clearTimeout(timer);
        resolve();
      });
    }
  });
}

/**
 * What any process of the gateway (alone, a worker, a cluster primary) does with an error nothing
 * caught. No input or backend behaviour is known to get here (the hardening suites try); should a
 * bug ever do it, the state of the process is unknown: leave one fatal line, let `beforeExit` stop
 * what would outlive the process (a primary's workers), flush, and exit 70 so that the supervisor
 * (the cluster primary, Kubernetes, systemd) starts a clean one.
 */
export function exitOnFatalError(log: LoggerHandle, beforeExit?: () => void): void {
  const onFatal = (error: unknown, origin: string) => {
    log.logger.fatal(
      {
        origin,
        error: error instanceof Error ? { message: error.message, stack: error.stack } : String(error),
      },
      "fatal error",
    );
    try {
      beforeExit?.();
    } finally {
      log.flush();
      process.exit(70);
    }
  };
  process.on("uncaughtException", onFatal);
  process.on("unhandledRejection", (reason) => onFatal(reason, "unhandledRejection"));
}

/** The start-up line, flushed at once: whoever started the process may be waiting for it. */
export function logListening(
  log: LoggerHandle,
  setup: ProcessSetup,
  fields: { readonly port: number; readonly opsPort: number; readonly workers: number },
): void {
  log.logger.info({ ...fields, environment: setup.environment }, "gateway listening");
  log.flush();
}

/**
 * The last step of a graceful shutdown, once no request is left: the ops port, the gateway (its
 * upstream agents, the policies' timers; a cluster primary runs none), the caller's own clean-up, then the logs flushed,
 * since they are the record of deprecated calls. A single process and a cluster primary both end here.
 */
export async function closeAndExit(
  opsServer: Server | undefined,
  gateway: Pick<Gateway, "close"> | undefined,
  options: { readonly log: LoggerHandle; readonly onStopped?: (() => Promise<void>) | undefined },
  exitCode: number,
): Promise<never> {
  if (opsServer) {
    opsServer.close();
    opsServer.closeAllConnections();
  }
  await gateway?.close();
  await options.onStopped?.();
  options.log.logger.info("stopped");
  options.log.flush();
  process.exit(exitCode);
}

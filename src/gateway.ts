// The gateway as a library: createGateway() gives request handlers that any Node HTTP server can
// mount; buildGateway() wraps them in the gateway's own public and ops servers (not listening).
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { GatewayConfig } from "./config-schema.ts";
import { createDecisionPipeline } from "./decision/index.ts";
import { createDocumentReloads, type DocumentReloads } from "./document-reload.ts";
import {
  buildVersion,
  createDocumentVersions,
  type DocumentVersion,
  type DocumentVersions,
  type OwnHeaders,
  type VersionSetting,
} from "./document-version.ts";
import { catalogueOf, type ErrorCode, gatewayError } from "./errors.ts";
import { createLogger, type Logger } from "./logger.ts";
import { createMetrics, type Metrics } from "./metrics.ts";
import type { DocumentSource } from "./openapi/document-source.ts";
import { type ApiDescription, compileDocumentSource, loadDocumentVersion } from "./openapi.ts";
import { createOpsHandler, localOpsSource, reportsOf } from "./ops.ts";
import { reclaimLeastRecentlyActive } from "./ops-connections.ts";
import { type OpsToken, openOpsToken } from "./ops-token.ts";
import { createPipeline } from "./pipeline/index.ts";
import { answerClientError, answerConnect, answerOpsClientError } from "./pipeline/local-replies.ts";
import { logPolicyFailure } from "./pipeline/policy-failure.ts";
import { watchSends } from "./pipeline/send-watchdog.ts";
import type { GatewayPlan } from "./plan.ts";
import type { AnyPolicyDefinition } from "./policy-registry.ts";
import type { TracingSettings } from "./tracing/index.ts";
import { loadedTracing } from "./tracing/load.ts";

export interface GatewayOptions {
  readonly config: GatewayConfig;
  /** The policies in their fixed order (policies/index.ts). */
  readonly policies: readonly AnyPolicyDefinition[];
  /** The backend, including its base path, e.g. http://pets:3000/v1 (unused in decision mode). */
  readonly upstreamUrl: string;
  /** "production", "staging", or "demo". */
  readonly environment: string;
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  readonly now?: () => number;
  /** Log the plan's warnings (default true); a cluster's workers leave them to the primary, which logs them once. */
  readonly startupWarnings?: boolean;
  /**
   * Serve the ops endpoints (default true). A cluster's workers leave them to the primary: they
   * do not read the ops token, and their handleOps answers only the probes.
   */
  readonly ops?: boolean;
  /** Count and log document reloads here (default true); a cluster's primary does, for its workers. */
  readonly reportsReloads?: boolean;
  /** The document's files, read by a cluster's primary: compiled as they are, never read again. */
  readonly document?: DocumentSource;
  /** Export spans over OTLP (tracingSettings() of the OTEL_* variables): a span per request or decision. */
  readonly tracing?: TracingSettings | undefined;
}

export interface Gateway {
  /** The description serving now (a reload replaces it). */
  readonly api: ApiDescription;
  /** The document's versions: the one serving, and the ones finishing their requests. */
  readonly versions: DocumentVersions;
  /** Reloading the document: alone (reload), or in a cluster's two steps (prepare, commit). */
  readonly document: DocumentReloads;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /**
   * The request headers the policies of the serving version set for the backend, and the
   * response headers the gateway adds to answers (lower case): what a proxy in front must carry
   * in decision mode.
   */
  readonly ownHeaders: OwnHeaders;
  /** The public handler: mount it on any http.Server. */
  readonly handle: (req: IncomingMessage, res: ServerResponse) => void;
  /** For the server's 'checkContinue' event: 100 Continue only once the request's head is accepted. */
  readonly handleExpectingContinue: (req: IncomingMessage, res: ServerResponse) => void;
  /** /metrics, /healthz, /readyz and the policies' reports. */
  readonly handleOps: (req: IncomingMessage, res: ServerResponse) => void;
  /** This process's part of a policy's ops report (undefined for a path no policy reports on). */
  collectReport(path: string): unknown;
  isReady(): boolean;
  /** Refuses the request behind a response Node found broken after the handler started (false: could not). */
  refuseResponse(res: ServerResponse, code: ErrorCode): boolean;
  /** At the shutdown deadline: answers the request 503 SHUTTING_DOWN, or cuts an answer under way. */
  endAtDeadline(res: ServerResponse): void;
  /**
   * The ops token and every policy of the serving version reload what they loaded at start (the
   * key file); resolves when all are done. The document is reloaded by `document`.
   */
  reload(why: string): Promise<void>;
  /** Readiness goes false and every answer from now on carries Connection: close. */
  drain(): void;
  /**
   * Lets go of what the gateway holds; the spans still queued are exported within what is left of
   * server.shutdownTimeoutMs since drain() (the whole of it without a drain).
   */
  close(): Promise<void>;
}

export function createGateway(options: GatewayOptions): Gateway {
  const { config } = options;
  // Two policies giving one code two meanings is a bug in the build, found before any request.
  const catalogue = catalogueOf(options.policies);
  const logger = options.logger ?? createLogger(config.log.level).logger;
  const metrics = options.metrics ?? createMetrics({ defaultMetrics: true });
  const loadOptions = { basePath: config.basePath };
  const { api, source } =
    options.document === undefined
      ? loadDocumentVersion(config.openapi, loadOptions)
      : { api: compileDocumentSource(options.document, loadOptions), source: options.document };
  const now = options.now ?? Date.now;
  // Registered once: a metric's series outlive the version whose policies counted them.
  const instruments = new Map(
    options.policies.map((definition) => [definition.name, definition.metrics?.(metrics.registry)] as const),
  );
  const setting: VersionSetting = {
    config,
    policies: options.policies,
    instruments,
    logger,
    environment: options.environment,
    now,
    gatewayStatuses: Object.values(catalogue).map((entry) => entry.status),
    failed: logPolicyFailure(logger),
  };
  // Read before any policy starts: a token file that cannot be read stops start-up like a key file.
  const serveOps = options.ops ?? true;
  const token = serveOps ? opsTokenOf(config, logger) : undefined;
  // What `npm run plan` prints, by the same functions: what the document asks for and the
  // gateway will not do as asked is said once, at start-up, one warn line each (a cluster's
  // workers leave it to the primary: the policies' create() refuses what the plan would).
  let first: DocumentVersion;
  try {
    first = buildVersion(setting, api, { number: 1, sha256: source.sha256 }, (plan) => {
      if (options.startupWarnings ?? true) logPlanWarnings(logger, plan);
    });
  } catch (error) {
    void token?.close();
    throw error;
  }
  const versions = createDocumentVersions(first, logger);
  const document = createDocumentReloads({
    config,
    policies: options.policies,
    versions,
    build: (candidate, identity) => buildVersion(setting, candidate, identity),
    logger,
    metrics,
    reportsReloads: options.reportsReloads ?? true,
    source,
  });
  // One tracing for both doors: the same sampler, queue, dropped-span count and shutdown flush.
  const tracing =
    options.tracing === undefined
      ? undefined
      : tracingFactory()(options.tracing, {
          dropped: metrics.traceSpansDropped,
          upstreamUrl: options.upstreamUrl,
        });
  // One engine, two front doors: decision mode answers a proxy in front instead of forwarding.
  const pipeline = (config.mode === "decision" ? createDecisionPipeline : createPipeline)({
    config,
    versions,
    metrics,
    logger,
    upstreamUrl: options.upstreamUrl,
    tracing,
  });
  let draining = false;
  /** When the shutdown began (drain()), from which server.shutdownTimeoutMs counts. */
  let drainedAt: number | undefined;
  const isReady = () => !draining;
  // The serving version's: a report counts from its version's start (it says since when).
  const collectReport = (path: string) => {
    for (const { instance } of versions.current().policies) {
      const collect = instance.collectReports?.[path];
      if (collect) return collect();
    }
    return undefined;
  };
  const handleOps = createOpsHandler({
    reports: reportsOf(options.policies, config.policies),
    isReady,
    source: localOpsSource(metrics, collectReport),
    logger,
    token: serveOps ? token : NO_TOKEN,
    metricsOpen: config.opsMetricsOpen,
  });

  return {
    get api() {
      return versions.current().api;
    },
    versions,
    document,
    metrics,
    logger,
    get ownHeaders() {
      return versions.current().ownHeaders;
    },
    handle: pipeline.handle,
    handleExpectingContinue: pipeline.handleExpectingContinue,
    handleOps,
    collectReport,
    isReady,
    refuseResponse: (res, code) => pipeline.refuseResponse(res, gatewayError(code)),
    endAtDeadline: (res) => pipeline.endAtDeadline(res),
    async reload(why) {
      // Isolated like a phase: a policy whose reload fails keeps what it had, and says so.
      await Promise.all([
        token?.reload(why),
        ...versions.current().policies.map(async ({ name, instance }) => {
          try {
            await instance.reload?.(why);
          } catch (error) {
            logger.error({ policy: name, phase: "reload", error: String(error) }, "policy failed");
          }
        }),
      ]);
    },
    drain() {
      draining = true;
      drainedAt ??= performance.now();
      pipeline.drain();
    },
    async close() {
      pipeline.close();
      // The spans of the last requests go out, within what is left of the shutdown's deadline:
      // a collector that is slow or resets must not make the process miss it and exit 1.
      const flushMs =
        drainedAt === undefined
          ? config.server.shutdownTimeoutMs
          : drainedAt + config.server.shutdownTimeoutMs - performance.now() - EXIT_MARGIN_MS;
      await Promise.all([token?.close(), versions.close(), tracing?.shutdown(Math.max(0, flushMs))]);
    },
  };
}

/** The ops port's token when the config names a file (read now: a ConfigError when it cannot be). */
export function opsTokenOf(config: GatewayConfig, logger: Logger): OpsToken | undefined {
  return config.opsTokenFile === undefined ? undefined : openOpsToken({ file: config.opsTokenFile, logger });
}

// A cluster worker's ops handler is never mounted: should it ever be, no token opens it.
const NO_TOKEN: OpsToken = {
  accepts: () => false,
  reload: async () => {},
  close: async () => {},
};

/** What a process needs after closing the gateway to exit before its deadline (the logs' flush). */
const EXIT_MARGIN_MS = 500;

function tracingFactory() {
  const create = loadedTracing();
  if (create === undefined)
    throw new Error("tracing settings given before await loadTracing() (src/tracing/load.ts)");
  return create;
}

/** Each thing the document asks that the gateway will not do as written: one warn line. */
export function logPlanWarnings(logger: Logger, plan: GatewayPlan): void {
  for (const { warning, message, policy, operations, fixes } of plan.warnings) {
    logger.warn({ warning, policy, operations, fixes }, message);
  }
}

export interface BuiltGateway {
  readonly gateway: Gateway;
  /** The public server: not listening yet (tests listen on port 0). */
  readonly server: http.Server;
  readonly opsServer: http.Server;
}

export function buildGateway(options: GatewayOptions): BuiltGateway {
  const gateway = createGateway(options);
  const { server: limits } = options.config;
  const server = http.createServer(serverOptions(limits), gateway.handle);
  server.maxConnections = limits.maxConnections;
  watchSends(server, limits);
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) =>
    answerClientError(error, socket, gateway),
  );
  // Without this listener Node writes 100 Continue before any policy ran, inviting a client that
  // has no valid key to upload its body.
  server.on("checkContinue", gateway.handleExpectingContinue);
  // Node answers an Expect other than 100-continue with a bare 417; RFC 9110 lets a server ignore
  // it, and the gateway does (it does not pass Expect on).
  server.on("checkExpectation", gateway.handle);
  // Without a listener Node drops a CONNECT without a word: the gateway is not a tunnel.
  server.on("connect", (_req: IncomingMessage, socket: Socket) => answerConnect(socket, gateway));
  return { gateway, server, opsServer: buildOpsServer(gateway.handleOps, limits) };
}

/**
 * The ops server around a handler (not listening): the public port's parser, timeouts and raw
 * answers, with a connection cap of its own, so that what operators probe and scrape holds no
 * more for an unauthenticated client than the public port does. The cap reclaims idle
 * connections instead of refusing (src/ops-connections.ts): a probe always gets an answer.
 */
export function buildOpsServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  limits: GatewayConfig["server"],
): http.Server {
  const server = http.createServer(
    { ...serverOptions(limits), keepAliveTimeout: limits.opsKeepAliveTimeoutMs },
    handler,
  );
  reclaimLeastRecentlyActive(server, limits.maxOpsConnections);
  server.on("clientError", answerOpsClientError);
  return server;
}

function serverOptions(limits: GatewayConfig["server"]): http.ServerOptions {
  return {
    // Never the lenient parser: request smuggling starts where two parsers disagree.
    insecureHTTPParser: false,
    // The canonical request refuses a missing or repeated Host itself, with the Error object;
    // Node's own refusal has no body and does not notice a second Host.
    requireHostHeader: false,
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node checks headersTimeout and requestTimeout only this often (30 s by default).
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
    // A request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112 6.3):
    // Node then skips its readable stream's life cycle (no 'data', 'end' or 'close' on it),
    // which the gateway never waits on for such a request (readBody and the upstream's body
    // check its framing first). Fewer events per GET: see docs/performance.md.
    optimizeEmptyRequests: true,
  };
}

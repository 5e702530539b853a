// The gateway as a library: createGateway() gives request handlers that any Node HTTP server can
// mount; buildGateway() wraps them in the gateway's own public and ops servers (not listening).
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { GatewayConfig } from "./config.ts";
import { type ErrorCode, errorBody, gatewayError } from "./errors.ts";
import { createLogger, type Logger } from "./logger.ts";
import { createMetrics, type Metrics, UNMATCHED } from "./metrics.ts";
import { type ApiDescription, loadApiDescription } from "./openapi.ts";
import { createOpsHandler, localOpsSource } from "./ops.ts";
import { createPipeline } from "./pipeline.ts";
import type { AnyPolicyDefinition, OpsReport, PolicyContext, PolicyInstance } from "./policy.ts";

export interface GatewayOptions {
  readonly config: GatewayConfig;
  /** The policies in their fixed order (policies/index.ts). */
  readonly policies: readonly AnyPolicyDefinition[];
  /** The backend, including its base path, e.g. http://pets:3000/v1. */
  readonly upstreamUrl: string;
  /** "production", "staging", or "demo". */
  readonly environment: string;
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  readonly now?: () => number;
}

export interface Gateway {
  readonly api: ApiDescription;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** The public handler: mount it on any http.Server. */
  readonly handle: (req: IncomingMessage, res: ServerResponse) => void;
  /** /metrics, /healthz, /readyz and the policies' reports. */
  readonly handleOps: (req: IncomingMessage, res: ServerResponse) => void;
  /** The policies' ops reports by path, for a primary that merges them over workers. */
  readonly opsReports: ReadonlyMap<string, OpsReport>;
  isReady(): boolean;
  /** Readiness goes false and every answer from now on carries Connection: close. */
  drain(): void;
  close(): Promise<void>;
}

export function createGateway(options: GatewayOptions): Gateway {
  const { config } = options;
  const logger = options.logger ?? createLogger(config.log.level).logger;
  const metrics = options.metrics ?? createMetrics({ defaultMetrics: true });
  const api = loadApiDescription(config.openapi);
  const context: PolicyContext = {
    api,
    logger,
    metrics,
    environment: options.environment,
    now: options.now ?? Date.now,
  };
  const instances: PolicyInstance[] = [];
  try {
    for (const definition of options.policies) {
      const policyOptions = config.policies[definition.name] as never;
      instances.push(definition.create(policyOptions, context));
    }
  } catch (error) {
    for (const instance of instances) void instance.close?.();
    throw error;
  }
  const pipeline = createPipeline({
    config,
    api,
    policies: instances,
    metrics,
    logger,
    upstreamUrl: options.upstreamUrl,
  });
  let draining = false;
  const isReady = () => !draining && instances.every((instance) => instance.isReady?.() ?? true);
  const opsReports = new Map<string, OpsReport>();
  for (const instance of instances) {
    for (const [path, report] of Object.entries(instance.opsReports ?? {})) opsReports.set(path, report);
  }
  const handleOps = createOpsHandler({ reports: opsReports, isReady, source: localOpsSource(metrics) });

  return {
    api,
    metrics,
    logger,
    handle: pipeline.handle,
    handleOps,
    opsReports,
    isReady,
    drain() {
      draining = true;
      pipeline.drain();
    },
    async close() {
      pipeline.close();
      await Promise.all(instances.map((instance) => instance.close?.()));
    },
  };
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
  const server = http.createServer(
    {
      // Never the lenient parser: request smuggling starts where two parsers disagree.
      insecureHTTPParser: false,
      requireHostHeader: true,
      maxHeaderSize: limits.maxHeaderBytes,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Node checks headersTimeout and requestTimeout only this often (30 s by default).
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
    },
    gateway.handle,
  );
  server.maxConnections = limits.maxConnections;
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) =>
    answerClientError(error, socket, gateway),
  );
  const opsServer = http.createServer(gateway.handleOps);
  opsServer.on("clientError", (_error, socket: Socket) => socket.destroy());
  return { gateway, server, opsServer };
}

const CLIENT_ERRORS: Readonly<Record<string, ErrorCode>> = {
  HPE_HEADER_OVERFLOW: "HEADERS_TOO_LARGE",
  ERR_HTTP_REQUEST_TIMEOUT: "REQUEST_TIMEOUT",
  ERR_HTTP_HEADERS_TIMEOUT: "REQUEST_TIMEOUT",
};

// What Node's parser refuses never reaches the handler; answer it with the Error object too.
function answerClientError(error: NodeJS.ErrnoException, socket: Socket, gateway: Gateway): void {
  const parserError = error.code ?? "";
  const code = CLIENT_ERRORS[parserError] ?? (parserError.startsWith("HPE_") ? "BAD_REQUEST" : undefined);
  if (code === undefined) {
    // A reset or broken pipe is the client leaving, not a request the gateway refused.
    socket.destroy();
    return;
  }
  const reply = gatewayError(code);
  // Counted and logged like any refusal; with no request line there is no operation or method.
  gateway.metrics.observeRejection(UNMATCHED, reply.reason, reply.code);
  gateway.logger.info(
    { operation: UNMATCHED, status: reply.status, code, reason: reply.reason, parserError },
    "request",
  );
  if (!socket.writable || (error as { bytesParsed?: number }).bytesParsed === undefined) {
    socket.destroy();
    return;
  }
  const body = errorBody(reply);
  socket.end(
    `HTTP/1.1 ${reply.status} ${http.STATUS_CODES[reply.status]}\r\n` +
      "Content-Type: application/json\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      "X-Content-Type-Options: nosniff\r\n" +
      "Connection: close\r\n\r\n" +
      body,
  );
  socket.destroySoon();
}

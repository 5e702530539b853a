// The gateway as a library: createGateway() gives request handlers that any Node HTTP server can
// mount; buildGateway() wraps them in the gateway's own public and ops servers (not listening).
import { randomUUID } from "node:crypto";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { ConfigError, type GatewayConfig } from "./config.ts";
import { type ErrorCode, errorBody, type GatewayError, gatewayError } from "./errors.ts";
import { createLogger, type Logger } from "./logger.ts";
import { createMetrics, type Metrics, UNMATCHED } from "./metrics.ts";
import { pendingResponse } from "./node-internals.ts";
import { type ApiDescription, loadApiDescription } from "./openapi.ts";
import { createOpsHandler, localOpsSource } from "./ops.ts";
import type { NamedPolicy } from "./pipeline/chains.ts";
import { isClosing, markClosing } from "./pipeline/connection-state.ts";
import { CORE_RESPONSE_HEADERS, createPipeline } from "./pipeline/index.ts";
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
  /** For the server's 'checkContinue' event: 100 Continue only once the request's head is accepted. */
  readonly handleExpectingContinue: (req: IncomingMessage, res: ServerResponse) => void;
  /** /metrics, /healthz, /readyz and the policies' reports. */
  readonly handleOps: (req: IncomingMessage, res: ServerResponse) => void;
  /** The policies' ops reports by path, for a primary that merges them over workers. */
  readonly opsReports: ReadonlyMap<string, OpsReport>;
  isReady(): boolean;
  /** Refuses the request behind a response Node found broken after the handler started (false: could not). */
  refuse(res: ServerResponse, code: ErrorCode): boolean;
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
    responseHeaders: () => [
      ...new Set([
        ...CORE_RESPONSE_HEADERS,
        ...instances.flatMap((instance) => instance.responseHeaders ?? []),
      ]),
    ],
  };
  const instances: PolicyInstance[] = [];
  const named: NamedPolicy[] = [];
  try {
    for (const definition of options.policies) {
      const policyOptions = config.policies[definition.name] as never;
      const instance = definition.create(policyOptions, context);
      instances.push(instance);
      named.push({ name: definition.name, instance });
    }
  } catch (error) {
    for (const instance of instances) void instance.close?.();
    // Bad policy options are a configuration problem: one line naming the field, no stack.
    throw error instanceof ConfigError || !(error instanceof Error) ? error : new ConfigError(error.message);
  }
  const pipeline = createPipeline({
    config,
    api,
    policies: named,
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
  const handleOps = createOpsHandler({
    reports: opsReports,
    isReady,
    source: localOpsSource(metrics),
    logger,
  });

  return {
    api,
    metrics,
    logger,
    handle: pipeline.handle,
    handleExpectingContinue: pipeline.handleExpectingContinue,
    handleOps,
    opsReports,
    isReady,
    refuse: (res, code) => pipeline.refuse(res, gatewayError(code)),
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
  const server = http.createServer(serverOptions(limits), gateway.handle);
  server.maxConnections = limits.maxConnections;
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
  server.on("connect", (_req: IncomingMessage, socket: Socket) => {
    const reply = gatewayError("BAD_REQUEST", "CONNECT is not served");
    observeRawRefusal(gateway, reply, { method: "CONNECT" });
    socket.on("error", () => socket.destroy());
    writeRawAnswer(socket, reply);
  });
  return { gateway, server, opsServer: buildOpsServer(gateway.handleOps, limits) };
}

/**
 * The ops server around a handler (not listening): the public port's parser, timeouts and raw
 * answers, with a connection cap of its own, so that what operators probe and scrape holds no
 * more for an unauthenticated client than the public port does.
 */
export function buildOpsServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  limits: GatewayConfig["server"],
): http.Server {
  const server = http.createServer(serverOptions(limits), handler);
  server.maxConnections = limits.maxOpsConnections;
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
  };
}

const CLIENT_ERRORS: Readonly<Record<string, ErrorCode>> = {
  HPE_HEADER_OVERFLOW: "HEADERS_TOO_LARGE",
  ERR_HTTP_REQUEST_TIMEOUT: "REQUEST_TIMEOUT",
  ERR_HTTP_HEADERS_TIMEOUT: "REQUEST_TIMEOUT",
};

// What Node's parser refuses, and the headers or request timeouts it enforces, never reach the
// handler: answer them with the Error object too, unless an answer is already on the wire.
function answerClientError(
  error: NodeJS.ErrnoException & { rawPacket?: Buffer },
  socket: Socket,
  gateway: Gateway,
): void {
  const parserError = error.code ?? "";
  // llhttp knows a fixed list of methods; any other token is a method this gateway does not
  // implement (RFC 9110 §9.1: 501), which deserves the same id, line and count as any answer.
  if (parserError === "HPE_INVALID_METHOD" && startsWithMethodToken(error.rawPacket)) {
    const reply = gatewayError("NOT_IMPLEMENTED");
    const requestId = randomUUID();
    gateway.metrics.observeRequest(UNMATCHED, OTHER_METHOD, reply.status, 0);
    observeRawRefusal(gateway, reply, { reqId: requestId, method: OTHER_METHOD });
    if (!socket.writable || isClosing(socket)) return void socket.destroy();
    return writeRawAnswer(socket, reply, requestId);
  }
  const code = CLIENT_ERRORS[parserError] ?? (parserError.startsWith("HPE_") ? "BAD_REQUEST" : undefined);
  if (code === undefined || parserError === "HPE_INVALID_EOF_STATE") {
    // A reset, a broken pipe or the connection closed mid-request is the client leaving, not a
    // request the gateway refused: a request it was sending is logged once, as 499, on close.
    socket.destroy();
    return;
  }
  const reply = gatewayError(code);
  const timeout = code === "REQUEST_TIMEOUT";
  const pending = pendingResponse(socket);
  // The request being answered is still arriving (a broken chunk, a body too slow): it is the one
  // refused, through the pipeline, which logs and counts it like any other refusal.
  if (pending && !isClosing(socket) && (timeout || pending.req?.complete === false)) {
    if (gateway.refuse(pending, code)) return;
  }
  // With no request line there is no operation or method.
  observeRawRefusal(gateway, reply, { parserError });
  if (isClosing(socket)) {
    // An answer that closes the connection went first; let it flush, write nothing after it.
    socket.destroySoon();
    return;
  }
  // An earlier request's answer is still to come: nothing may be written before it.
  if (!socket.writable || pending) {
    socket.destroy();
    return;
  }
  writeRawAnswer(socket, reply);
}

// The ops port counts and logs no requests: a refusal there is only answered, as the public
// port answers it.
function answerOpsClientError(error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket): void {
  const parserError = error.code ?? "";
  const code =
    parserError === "HPE_INVALID_METHOD" && startsWithMethodToken(error.rawPacket)
      ? "NOT_IMPLEMENTED"
      : (CLIENT_ERRORS[parserError] ?? (parserError.startsWith("HPE_") ? "BAD_REQUEST" : undefined));
  const pending = pendingResponse(socket);
  // The client leaving, or an answer still to come that nothing may be written before.
  if (code === undefined || parserError === "HPE_INVALID_EOF_STATE" || pending || !socket.writable) {
    socket.destroy();
    return;
  }
  socket.on("error", () => socket.destroy());
  writeRawAnswer(socket, gatewayError(code));
}

/** A refusal the pipeline never saw, counted and logged like any refusal. */
function observeRawRefusal(gateway: Gateway, reply: GatewayError, fields: Record<string, string>): void {
  gateway.metrics.observeRejection(UNMATCHED, reply.reason, reply.code);
  gateway.logger.info(
    { operation: UNMATCHED, ...fields, status: reply.status, code: reply.code, reason: reply.reason },
    "request",
  );
}

/** The method label of a token the parser refused: never the client's text (unbounded label values). */
const OTHER_METHOD = "_OTHER";
/** Longer than any registered method: a longer run is not read as one. */
const MAX_METHOD_LENGTH = 32;
const SPACE = 0x20;

/** Whether the bytes start with an RFC 9110 token and a space, as a request line's method does. */
function startsWithMethodToken(bytes: Buffer | undefined): boolean {
  if (bytes === undefined) return false;
  const end = Math.min(bytes.length, MAX_METHOD_LENGTH + 1);
  for (let index = 0; index < end; index++) {
    const byte = bytes[index] as number;
    if (byte === SPACE) return index > 0;
    if (!isTokenChar(byte)) return false;
  }
  return false;
}

// tchar: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
function isTokenChar(byte: number): boolean {
  if ((byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a))
    return true;
  return "!#$%&'*+-.^_`|~".includes(String.fromCharCode(byte));
}

function writeRawAnswer(socket: Socket, reply: GatewayError, requestId?: string): void {
  markClosing(socket);
  const body = errorBody(reply);
  socket.end(
    `HTTP/1.1 ${reply.status} ${http.STATUS_CODES[reply.status]}\r\n` +
      "Content-Type: application/json\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      "Cache-Control: no-store\r\n" +
      "X-Content-Type-Options: nosniff\r\n" +
      (requestId === undefined ? "" : `X-Request-Id: ${requestId}\r\n`) +
      "Connection: close\r\n\r\n" +
      body,
  );
  socket.destroySoon();
}

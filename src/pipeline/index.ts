// One request's way through the gateway: canonical request -> route -> inbound policies in their
// fixed order -> body -> proxy -> outbound policies in reverse order -> one observe step.
// The core calls policies only through their phases; it knows none of them by name.
import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import type { Logger } from "pino";
import type { GatewayConfig } from "../config.ts";
import { type GatewayError, gatewayError } from "../errors.ts";
import { flatLineLogger } from "../logger.ts";
import { type Metrics, UNMATCHED } from "../metrics.ts";
import type { ApiDescription, Operation } from "../openapi.ts";
import type { Exchange, UpstreamAnswer } from "../policy.ts";
import { createUpstream, type Upstream, type UpstreamFault, upstreamDone } from "../proxy.ts";
import { createRouter } from "../router.ts";
import { trustedProxies } from "../trusted-proxies.ts";
import { JSON_FAMILY_MEDIA_TYPE, loggedPath } from "../untrusted-text.ts";
import { finishHeaders } from "./answer-headers.ts";
import { markExpectingContinue, readBody } from "./body.ts";
import {
  canonicalTarget,
  connectionListed,
  isHopByHop,
  parseQuery,
  scrubRequestHeaders,
  serializeQuery,
} from "./canonical-request.ts";
import { buildArrival, buildChains, type Chain, type NamedPolicy } from "./chains.ts";
import { admitRequest, isClosing, requestEnded, waitTurn } from "./connection-state.ts";
import { carryExchange, exchangeOf, newExchange } from "./exchange.ts";
import { createLocalReplies } from "./local-replies.ts";

export { CORE_RESPONSE_HEADERS } from "./answer-headers.ts";

import { clientAddressOf, forward } from "./forward.ts";
import { clientRequestId, isCredentialAsId } from "./request-id.ts";

export interface PipelineOptions {
  readonly config: GatewayConfig;
  readonly api: ApiDescription;
  readonly policies: readonly NamedPolicy[];
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly upstreamUrl: string;
}

export interface Pipeline {
  handle(req: IncomingMessage, res: ServerResponse): void;
  /**
   * A request that sent Expect: 100-continue (the server's 'checkContinue'): 100 Continue is
   * written when its body is about to be read, after every request phase accepted its head.
   */
  handleExpectingContinue(req: IncomingMessage, res: ServerResponse): void;
  /**
   * Refuses the request a response belongs to, when Node found it broken after the handler had
   * started (a bad chunk in its body, a request timeout): the answer goes through the usual
   * reply and observe steps and closes the connection. False when nothing can be written.
   */
  refuse(res: ServerResponse, error: GatewayError): boolean;
  /** From now on every answer carries Connection: close. */
  drain(): void;
  close(): void;
}

export function createPipeline(options: PipelineOptions): Pipeline {
  const { config, api, metrics, logger } = options;
  const router = createRouter(api.basePath, api.operations);
  // A policy that throws fails its request, not the process (chains.ts): logged here.
  const policyFailed = (policy: string, phase: string, exchange: Exchange | undefined, error: unknown) => {
    if (exchange) exchange.notes.policyFailed = `${policy} ${phase}`;
    logger.error(
      {
        reqId: exchange?.requestId,
        operation: exchange?.operation?.id,
        policy,
        phase,
        error: error instanceof Error ? { message: error.message, stack: error.stack } : String(error),
      },
      "policy failed",
    );
  };
  const chains = buildChains(api.operations, options.policies, policyFailed);
  const { arrival, isCredential } = buildArrival(options.policies, policyFailed);
  const isTrustedProxy = trustedProxies(config.server.trustedProxies);
  const basePathLength = api.basePath.length;
  const accessLog = flatLineLogger(logger);
  const tooLargeMessage = `the request body is over ${config.server.maxRequestBodyBytes} bytes`;
  let draining = false;

  const upstream: Upstream = createUpstream(options.upstreamUrl, config.upstream, exchangeOf, {
    onResponse: onUpstreamResponse,
    onFault: onUpstreamFault,
    onConnected: (ok) => metrics.upstreamUp.set(ok ? 1 : 0),
  });
  const { reject, answerLocally } = createLocalReplies(chains, upstream.abandon, () => draining);

  function handle(req: IncomingMessage, res: ServerResponse): void {
    // A connection holds at most PIPELINE_DEPTH requests in flight; the rest wait their turn.
    if (!isClosing(req.socket) && !admitRequest(req.socket)) {
      req.on("error", ignoreClientError);
      res.on("error", ignoreClientError);
      return waitTurn(req.socket, () => judge(req, res));
    }
    judge(req, res);
  }

  function judge(req: IncomingMessage, res: ServerResponse): void {
    // A request pipelined behind an answer that closes the connection is never judged nor
    // forwarded: the client has to send it again on a new connection.
    if (isClosing(req.socket)) {
      req.on("error", ignoreClientError);
      res.on("error", ignoreClientError);
      req.resume();
      return;
    }
    const clientId = clientRequestId(req.headers);
    const credentialAsId =
      clientId !== undefined && isCredentialAsId(clientId, req.headers.authorization, isCredential);
    const exchange = newExchange(
      req,
      res,
      clientId !== undefined && !credentialAsId ? clientId : randomUUID(),
      clientAddressOf(req, isTrustedProxy),
    );
    // Replacing a known key tells the client it is one: the operator sees that somebody tried.
    if (credentialAsId) exchange.notes.requestIdReplaced = "credential";
    res.once("close", onResponseClose);
    req.on("error", ignoreClientError);
    res.on("error", ignoreClientError);

    const target = canonicalTarget(req);
    if (target.refusal !== undefined) return reject(exchange, target.refusal, target.closeConnection);
    const { path, rawQuery } = target;
    scrubRequestHeaders(req.headers);
    for (const phase of arrival) {
      const reply = phase(exchange);
      if (reply) return "code" in reply ? reject(exchange, reply) : answerLocally(exchange, reply);
    }
    const badQuery = parseQuery(rawQuery, exchange.query);
    if (badQuery !== undefined) return reject(exchange, badQuery);
    const match = router.match(req.method ?? "", path);
    if (match.kind === "not-found") return reject(exchange, gatewayError("NOT_FOUND"));
    if (match.kind === "method-not-allowed") {
      return reject(exchange, gatewayError("METHOD_NOT_ALLOWED", undefined, { allow: match.allow }));
    }
    exchange.operation = match.operation;
    exchange.pathParams = match.pathParams;
    const chain = chains.get(match.operation) as Chain;
    for (const phase of chain.request) {
      const error = phase(exchange);
      if (error) return reject(exchange, error);
    }
    // The backend's own base path replaces the public one; http-proxy-3 prepends the target's path.
    req.url = exchange.queryChanged
      ? `${path.slice(basePathLength)}?${serializeQuery(exchange.query)}`
      : exchange.url.slice(basePathLength);
    if (match.operation.requestBody === undefined)
      return forward(exchange, chain, undefined, upstream, isTrustedProxy);
    readBody(exchange, chain, config.server.maxRequestBodyBytes, bodyRead, refuseTooLarge);
  }

  function bodyRead(exchange: Exchange, chain: Chain): void {
    for (const phase of chain.requestBody) {
      const error = phase(exchange);
      if (error) return reject(exchange, error);
    }
    forward(exchange, chain, exchange.body, upstream, isTrustedProxy);
  }

  // Closes the connection: the rest of the body is never read.
  function refuseTooLarge(exchange: Exchange): void {
    reject(exchange, gatewayError("PAYLOAD_TOO_LARGE", tooLargeMessage), true);
  }

  function onUpstreamResponse(exchange: Exchange, response: IncomingMessage): void {
    exchange.upstreamStatus = response.statusCode ?? 502;
    carryExchange(response, exchange);
    const chain = chains.get(exchange.operation as Operation) as Chain;
    const status = exchange.upstreamStatus;
    if (status < 200 || status > 599) {
      // Not a final HTTP status: nothing a client could rely on.
      response.destroy();
      exchange.notes.upstreamFault = `status ${status}`;
      return reject(
        exchange,
        gatewayError("UPSTREAM_UNAVAILABLE", "The backend answered with an invalid status"),
      );
    }
    const bodyless = exchange.req.method === "HEAD" || status === 204 || status === 304;
    // Such an answer is whole at its head: bytes a sloppy backend sends after it (a body for a
    // HEAD, a 204 with a Content-Length) break its socket, not the answer the client is owed.
    if (bodyless) upstreamDone(exchange);
    if (
      chain.readsResponseBody &&
      !bodyless &&
      JSON_FAMILY_MEDIA_TYPE.test(response.headers["content-type"] ?? "")
    ) {
      bufferResponse(exchange, chain, response);
      return;
    }
    const error = runResponsePhases(exchange, chain, {
      status,
      headers: response.headers,
      body: undefined,
      oversized: false,
      fault: undefined,
    });
    if (error) {
      response.destroy();
      return reject(exchange, error);
    }
    writeUpstreamHead(exchange, chain, response, undefined);
    streamRest(exchange, response);
  }

  // The deadline covers the whole answer, not just its head: a backend that stalls mid-body (or
  // a client that reads slowly and holds a backend socket) is cut off like one that never answers.
  function streamRest(exchange: Exchange, response: IncomingMessage): void {
    response.on("error", onStreamedResponseError);
    response.once("end", () => upstreamDone(exchange));
    response.pipe(exchange.res);
  }

  function bufferResponse(exchange: Exchange, chain: Chain, response: IncomingMessage): void {
    const limit = config.server.maxResponseBodyBytes;
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      chunks.push(chunk);
      if (size <= limit) return;
      response.off("data", onData);
      response.off("end", onEnd);
      response.pause();
      const error = runResponsePhases(exchange, chain, {
        status: exchange.upstreamStatus,
        headers: response.headers,
        body: undefined,
        oversized: true,
        fault: undefined,
      });
      if (error) {
        response.destroy();
        return reject(exchange, error);
      }
      // Allowed through (e.g. report mode): what was read goes first, the rest streams.
      writeUpstreamHead(exchange, chain, response, undefined);
      for (const buffered of chunks) exchange.res.write(buffered);
      streamRest(exchange, response);
      response.resume();
    };
    const onEnd = () => {
      upstreamDone(exchange);
      if (exchange.finished) return;
      const raw = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
      const decoded = decode(raw, response.headers["content-encoding"], limit);
      const answer: UpstreamAnswer = {
        status: exchange.upstreamStatus,
        headers: response.headers,
        body: decoded.body,
        oversized: decoded.oversized,
        fault: decoded.fault,
      };
      const error = runResponsePhases(exchange, chain, answer);
      if (error) return reject(exchange, error);
      // Undecodable or over the cap once decoded, and let through: the client gets it as it came.
      writeUpstreamHead(exchange, chain, response, decoded.body, raw);
      exchange.res.end(decoded.body ?? raw);
    };
    response.on("data", onData);
    response.on("end", onEnd);
    response.on("error", () => {
      if (exchange.finished) return;
      upstreamDone(exchange);
      reject(
        exchange,
        gatewayError("UPSTREAM_UNAVAILABLE", "The backend closed the connection in the middle of its answer"),
      );
    });
  }

  function runResponsePhases(
    exchange: Exchange,
    chain: Chain,
    answer: UpstreamAnswer,
  ): GatewayError | undefined {
    for (const phase of chain.response) {
      const error = phase(exchange, answer);
      if (error) return error;
    }
    return undefined;
  }

  function writeUpstreamHead(
    exchange: Exchange,
    chain: Chain,
    response: IncomingMessage,
    decoded: Buffer | undefined,
    raw?: Buffer,
  ): void {
    const headers = endToEnd(response.headers);
    if (decoded !== undefined) {
      if (headers["content-encoding"] !== undefined) delete headers["content-encoding"];
      headers["content-length"] = decoded.length;
    } else if (raw !== undefined) headers["content-length"] = raw.length;
    finishHeaders(exchange, chain, exchange.upstreamStatus, headers, draining);
    exchange.res.writeHead(exchange.upstreamStatus, headers);
  }

  function onUpstreamFault(exchange: Exchange, fault: UpstreamFault, detail: string): void {
    exchange.notes.upstreamFault = detail;
    if (exchange.res.headersSent) {
      // Mid-body: the client must see a broken answer, never a complete-looking short one.
      exchange.res.destroy();
      return;
    }
    reject(
      exchange,
      fault === "timeout"
        ? gatewayError(
            "UPSTREAM_TIMEOUT",
            `The backend did not answer within ${config.upstream.timeoutMs} ms`,
          )
        : gatewayError("UPSTREAM_UNAVAILABLE"),
    );
  }

  function onResponseClose(this: ServerResponse): void {
    const exchange = exchangeOf(this);
    if (!exchange) return;
    requestEnded(exchange.req.socket);
    if (exchange.finished) return;
    exchange.finished = true;
    if (exchange.upstreamStartedAt !== 0 && exchange.upstreamEndedAt === 0) upstream.abandon(exchange);
    let status = this.statusCode;
    if (!this.writableFinished) {
      exchange.notes.aborted = true;
      // Cut mid-answer: by the backend (a fault, counted as 502) or by the client (499).
      status = this.headersSent && exchange.notes.upstreamFault !== undefined ? 502 : 499;
    }
    observe(exchange, status);
  }

  // The one observe step every request ends in: metrics and the access log line.
  function observe(exchange: Exchange, status: number): void {
    const operation = exchange.operation?.id ?? UNMATCHED;
    const method = exchange.req.method ?? "";
    const end = performance.now();
    const seconds = (end - exchange.startedAt) / 1000;
    metrics.observeRequest(operation, method, status, seconds);
    const { rejection } = exchange;
    if (rejection) metrics.observeRejection(operation, rejection.reason, rejection.code);
    let upstreamMs: number | undefined;
    if (exchange.upstreamStartedAt !== 0 && exchange.upstreamStatus !== 0) {
      upstreamMs = exchange.upstreamEndedAt - exchange.upstreamStartedAt;
      metrics.observeUpstream(operation, method, exchange.upstreamStatus, upstreamMs / 1000);
      metrics.observeOverhead(operation, seconds - upstreamMs / 1000);
    }
    // Flat on purpose (see flatLineLogger): a field holding an object would escape redaction.
    accessLog.info(
      {
        reqId: exchange.requestId,
        operation,
        method,
        path: loggedPath(exchange.url),
        status,
        durationMs: round(end - exchange.startedAt),
        upstreamMs: upstreamMs === undefined ? undefined : round(upstreamMs),
        upstreamStatus: exchange.upstreamStatus || undefined,
        consumer: exchange.consumer,
        code: rejection?.code,
        reason: rejection?.reason,
        ...exchange.notes,
      },
      "request",
    );
  }

  return {
    handle,
    handleExpectingContinue(req, res) {
      markExpectingContinue(req);
      handle(req, res);
    },
    refuse(res, error) {
      const exchange = exchangeOf(res);
      if (!exchange || exchange.finished || res.headersSent || !res.writable) return false;
      reject(exchange, error, true);
      return true;
    },
    drain() {
      draining = true;
    },
    close() {
      upstream.close();
    },
  };
}

function onStreamedResponseError(this: IncomingMessage): void {
  const exchange = exchangeOf(this);
  if (!exchange) return;
  // The answer is already on its way: cut the connection so the client sees it incomplete.
  exchange.notes.upstreamFault ??= "reset mid-body";
  exchange.res.destroy();
}

function ignoreClientError(): void {
  // A client that goes away mid-request is not the gateway's fault; 'close' observes it.
}

/**
 * The backend's headers minus the hop-by-hop ones, copied in one pass instead of copy-then-delete.
 * CORS is the gateway's to answer, on or off: a backend that reflects any origin with credentials
 * would otherwise open to every site what the gateway's CORS policy opens to a few.
 */
function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const listed = connectionListed(headers.connection);
  const copy: OutgoingHttpHeaders = {};
  for (const name in headers) {
    if (isHopByHop(name) || (listed.length > 0 && listed.includes(name))) continue;
    if (name.startsWith(ACCESS_CONTROL)) continue;
    copy[name] = headers[name];
  }
  return copy;
}
const ACCESS_CONTROL = "access-control-";

function decode(
  raw: Buffer,
  encoding: string | undefined,
  limit: number,
): { body: Buffer | undefined; oversized: boolean; fault: string | undefined } {
  if (encoding === undefined || encoding === "identity" || encoding === "") {
    return { body: raw, oversized: false, fault: undefined };
  }
  try {
    const options = { maxOutputLength: limit };
    const value = encoding.toLowerCase().trim();
    if (value === "gzip" || value === "x-gzip")
      return { body: gunzipSync(raw, options), oversized: false, fault: undefined };
    if (value === "deflate") return { body: inflateSync(raw, options), oversized: false, fault: undefined };
    if (value === "br")
      return { body: brotliDecompressSync(raw, options), oversized: false, fault: undefined };
    return { body: undefined, oversized: false, fault: `unsupported content-encoding ${value}` };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ERR_BUFFER_TOO_LARGE") return { body: undefined, oversized: true, fault: undefined };
    return { body: undefined, oversized: false, fault: `undecodable ${encoding} body` };
  }
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

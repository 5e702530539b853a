// The spine of one request's way through the gateway (serveRequest): canonical request -> arrival
// phases -> query -> route -> request phases -> rewrite -> body -> forward; the backend's answer
// then goes through its response phases in reverse order, and every request ends in one observe
// step. Each step lives in a file of its own in this folder; here is only their order. The core
// calls policies only through their phases; it knows none of them by name.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { GatewayConfig } from "../config-schema.ts";
import { type DocumentVersions, versionOf } from "../document-version.ts";
import { type GatewayError, gatewayError } from "../errors.ts";
import type { Metrics } from "../metrics.ts";
import { createUpstream, type Upstream } from "../proxy.ts";
import type { Tracing } from "../tracing/index.ts";
import { trustedProxies } from "../trusted-proxies.ts";
import { createAnswerBudget } from "./answer-budget.ts";
import { createBasePathHint } from "./base-path-hint.ts";
import { markExpectingContinue, readBody } from "./body.ts";
import type { Chain } from "./chains.ts";
import { ignoreClientError, inTurn, requestEnded } from "./connection-state.ts";
import type { CoreExchange } from "./exchange.ts";
import { exchangeOf } from "./exchange.ts";
import { clientAddressOf, forward } from "./forward.ts";
import { createLocalReplies } from "./local-replies.ts";
import { createObserve } from "./observe.ts";
import { createUpstreamAnswers } from "./upstream-answer.ts";

export { CORE_RESPONSE_HEADERS } from "./answer-headers.ts";

export interface PipelineOptions {
  readonly config: GatewayConfig;
  /** The document's versions (document-version.ts): each request is judged by the one it arrived under. */
  readonly versions: DocumentVersions;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly upstreamUrl: string;
  /** Spans of each request, when the gateway exports traces. */
  readonly tracing?: Tracing | undefined;
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
  refuseResponse(res: ServerResponse, error: GatewayError): boolean;
  /**
   * The shutdown deadline: a request whose answer has not started is answered 503 SHUTTING_DOWN,
   * one under way is cut (its access line says cutAtDeadline). Either way its 'close' logs it.
   */
  endAtDeadline(res: ServerResponse): void;
  /** From now on every answer carries Connection: close. */
  drain(): void;
  close(): void;
}

const GATEWAY_BUSY = gatewayError("GATEWAY_BUSY", undefined, { "retry-after": "1" });

export function createPipeline(options: PipelineOptions): Pipeline {
  const { config, versions, metrics, logger, tracing } = options;
  // Every live version's chains, by operation: the answer's steps find a request's chain by its operation.
  const { chains } = versions;
  const isTrustedProxy = trustedProxies(config.server.trustedProxies);
  const tooLargeMessage = `the request body is over ${config.server.maxRequestBodyBytes} bytes`;
  let draining = false;

  const isDraining = () => draining;
  // The upstream is made last, since its handlers are the upstream answer's, which refuse through
  // the local replies: those reach it only once a request runs.
  const abandonUpstream = (exchange: CoreExchange) => upstream.abandon(exchange);
  const { refuse, answerLocally } = createLocalReplies(chains, abandonUpstream, isDraining);
  const budget = createAnswerBudget(config.server);
  const answers = createUpstreamAnswers({
    chains,
    refuse,
    budget,
    maxBodyBytes: config.server.maxResponseBodyBytes,
    timeoutMs: config.upstream.timeoutMs,
    isDraining,
    basePathHint: createBasePathHint(logger, options.upstreamUrl, versions.current().api.basePath),
  });
  const { maxQueuedAnswerBytes } = config.server;
  const onResponseClose = createObserve(
    metrics,
    logger,
    abandonUpstream,
    (exchange) => {
      budget.release(exchange);
      requestEnded(exchange.req.socket, maxQueuedAnswerBytes);
      versions.leave(exchange.version);
    },
    versions.statusLabel,
    tracing,
  );
  const upstream: Upstream = createUpstream(options.upstreamUrl, config.upstream, {
    onResponse: answers.onResponse,
    onFault: answers.onFault,
    onConnected: (ok) => metrics.upstreamUp.set(ok ? 1 : 0),
  });

  const handle = inTurn(maxQueuedAnswerBytes, serveRequest);

  function serveRequest(req: IncomingMessage, res: ServerResponse): void {
    // Read once: a reload swapped in while this request is under way does not change its judge.
    const version = versions.enter();
    const exchange = version.judge.open(req, res, clientAddressOf(req, isTrustedProxy));
    exchange.version = version;
    if (tracing !== undefined) tracing.startServer(exchange);
    res.once("close", onResponseClose);
    req.on("error", ignoreClientError);
    res.on("error", ignoreClientError);

    const verdict = version.judge.head(exchange);
    if (verdict.kind === "refuse") return refuse(exchange, verdict.error, verdict.closeConnection);
    if (verdict.kind === "answer") return answerLocally(exchange, verdict.reply);
    const { chain } = verdict;
    // The upstream prepends its own base path.
    req.url = verdict.upstreamTarget;
    if (verdict.operation.requestBody === undefined) return send(exchange, chain);
    readBody(exchange, chain, config.server.maxRequestBodyBytes, bodyRead, refuseTooLarge);
  }

  function send(exchange: CoreExchange, chain: Chain): void {
    // An answer that would be held to be judged whole is not asked for while the process holds
    // all it may: the client is told to come back, and nothing reached the backend.
    exchange.holdsAnswer = chain.holdsAnswer ? chain.holdsAnswer(exchange) : chain.readsResponseBody;
    if (exchange.holdsAnswer) {
      if (budget.isFull()) return refuse(exchange, GATEWAY_BUSY);
      budget.reserve(exchange);
    }
    if (tracing !== undefined) tracing.startClient(exchange);
    forward(exchange, chain, exchange.body, upstream, isTrustedProxy);
  }

  function bodyRead(exchange: CoreExchange, chain: Chain): void {
    const error = versionOf(exchange).judge.body(exchange, chain);
    if (error) return refuse(exchange, error);
    send(exchange, chain);
  }

  // Closes the connection: the rest of the body is never read.
  function refuseTooLarge(exchange: CoreExchange): void {
    refuse(exchange, gatewayError("PAYLOAD_TOO_LARGE", tooLargeMessage), true);
  }

  return {
    handle,
    handleExpectingContinue(req, res) {
      markExpectingContinue(req);
      handle(req, res);
    },
    refuseResponse(res, error) {
      const exchange = exchangeOf(res);
      if (!exchange || exchange.finished || res.headersSent || !res.writable) return false;
      refuse(exchange, error, true);
      return true;
    },
    endAtDeadline(res) {
      const exchange = exchangeOf(res);
      if (exchange && !exchange.finished && !res.headersSent && res.writable) {
        return refuse(exchange, gatewayError("SHUTTING_DOWN"), true);
      }
      if (exchange && !exchange.finished) exchange.facts.cutAtDeadline = true;
      res.socket?.destroy();
    },
    drain() {
      draining = true;
    },
    close() {
      upstream.close();
    },
  };
}

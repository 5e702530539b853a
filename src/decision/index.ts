// Decision mode (GATEWAY_MODE=decision): the gateway does not proxy; the proxy a team already
// runs asks it, at a door of its own (/decide/nginx, /decide/envoy), whether to let each request
// through. One engine, two front doors: the request side (canonical request, routing, auth,
// lifecycle, limit, request validation, CORS) is the very code proxy mode runs
// (pipeline/request-judge.ts); so are the answers' headers, the metrics and the one access line
// per decision. What differs is only how the original request is read and how the verdict is said.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { versionOf } from "../document-version.ts";
import { gatewayError } from "../errors.ts";
import { finishHeaders } from "../pipeline/answer-headers.ts";
import { markExpectingContinue, readBody } from "../pipeline/body.ts";
import type { Chain } from "../pipeline/chains.ts";
import { ignoreClientError, inTurn, requestEnded } from "../pipeline/connection-state.ts";
import { type CoreExchange, exchangeOf } from "../pipeline/exchange.ts";
import type { Pipeline, PipelineOptions } from "../pipeline/index.ts";
import { createLocalReplies, type LocalReplies } from "../pipeline/local-replies.ts";
import { createObserve } from "../pipeline/observe.ts";
import { trustedProxies } from "../trusted-proxies.ts";
import { CARRIED_ANSWER_HEADER, renderCarried } from "./carried-answer.ts";
import { callOf, clientOfDecision, type Door } from "./doors.ts";

export function createDecisionPipeline(options: PipelineOptions): Pipeline {
  const { config, versions, metrics, logger, tracing } = options;
  // Every live version's chains, by operation: the replies find a request's chain by its operation.
  const { chains } = versions;
  const { maxQueuedAnswerBytes, maxRequestBodyBytes } = config.server;
  const isTrustedProxy = trustedProxies(config.server.trustedProxies);
  const tooLargeMessage = `the request body is over ${maxRequestBodyBytes} bytes`;
  let draining = false;
  const isDraining = () => draining;
  const noUpstream = () => {};
  const direct = createLocalReplies(chains, noUpstream, isDraining);
  const carried = new Map<string, LocalReplies>();
  const repliesOf = (exchange: CoreExchange): LocalReplies =>
    carried.get(String(exchange.facts.decidedFor)) ?? direct;
  const onResponseClose = createObserve(
    metrics,
    logger,
    noUpstream,
    (exchange) => {
      requestEnded(exchange.req.socket, maxQueuedAnswerBytes);
      versions.leave(exchange.version);
    },
    versions.statusLabel,
    tracing,
  );

  const handle = inTurn(maxQueuedAnswerBytes, decide);

  function decide(req: IncomingMessage, res: ServerResponse): void {
    const call = callOf(req.url ?? "");
    if (call.kind === "render") {
      // Not a decision: nothing is counted or logged, the request phases never run, and no span
      // is made (the decision it renders has its span already: a second would double the trace).
      res.once("close", () => requestEnded(req.socket, maxQueuedAnswerBytes));
      res.on("error", ignoreClientError);
      req.resume();
      return renderCarried(req.headers[CARRIED_ANSWER_HEADER], res);
    }
    const door = call.kind === "decide" ? call.door : undefined;
    const entered = door?.enter(req);
    const clientAddress = clientOfDecision(req.socket.remoteAddress ?? "", entered, isTrustedProxy);
    // Read once, as in proxy mode: a reload swapped in meanwhile does not change this decision's judge.
    const version = versions.enter();
    const exchange = version.judge.open(req, res, clientAddress);
    exchange.version = version;
    // The decision's server span: the child of the traceparent the proxy sent with the call (the
    // client's, or the proxy's own span), named and described by the original request, which
    // enter() has put in its place. The allow answer leaves the backend's traceparent alone: the
    // proxy forwards the client's, and this span is a leaf beside the backend's.
    if (tracing !== undefined) tracing.startServer(exchange);
    res.once("close", onResponseClose);
    req.on("error", ignoreClientError);
    res.on("error", ignoreClientError);
    // Anything but a door's call is refused, as proxy mode refuses a path of no operation.
    if (door === undefined) return direct.refuse(exchange, gatewayError("NOT_FOUND"));
    // Which door the call came through: its answers go out in that door's form.
    exchange.facts.decidedFor = door.name;
    if (door.carry !== undefined && !carried.has(door.name)) {
      carried.set(door.name, createLocalReplies(chains, noUpstream, isDraining, door.carry));
    }
    // A call that does not say what the original request was is the proxy's misconfiguration:
    // refused as it is (never carried as a refusal to the client), so that the proxy fails closed.
    if (entered !== undefined && "problem" in entered) {
      return direct.refuse(exchange, gatewayError("BAD_REQUEST", entered.problem));
    }
    const replies = repliesOf(exchange);
    // The proxy sends no body to this door: nothing of it is left to read on this connection.
    if (!door.readsBody) exchange.body = NO_BODY;
    const verdict = version.judge.head(exchange);
    if (verdict.kind === "refuse") return replies.refuse(exchange, verdict.error, verdict.closeConnection);
    if (verdict.kind === "answer") return replies.answerLocally(exchange, verdict.reply);
    const { chain, upstreamTarget } = verdict;
    // A proxy that sends no body still says how long the client declared it: over the cap, the
    // refusal proxy mode would give.
    if (!door.readsBody && Number(exchange.headers["content-length"]) > maxRequestBodyBytes) {
      return replies.refuse(exchange, gatewayError("PAYLOAD_TOO_LARGE", tooLargeMessage));
    }
    if (!door.readsBody || verdict.operation.requestBody === undefined) {
      return allow(exchange, chain, door, upstreamTarget);
    }
    readBody(
      exchange,
      chain,
      maxRequestBodyBytes,
      (read) => {
        const error = version.judge.body(read, chain);
        if (error) return replies.refuse(read, error);
        allow(read, chain, door, upstreamTarget);
      },
      (refused) => replies.refuse(refused, gatewayError("PAYLOAD_TOO_LARGE", tooLargeMessage), true),
    );
  }

  function allow(exchange: CoreExchange, chain: Chain, door: Door, upstreamTarget: string): void {
    if (exchange.finished || exchange.res.headersSent) return;
    exchange.facts.decision = "allow";
    // The headers the client's answer gets, as proxy mode adds them to the backend's answer.
    const headers: OutgoingHttpHeaders = {};
    finishHeaders(exchange, chain, 200, headers, draining);
    // The request headers the version's policies set for the backend (the consumer, its
    // credential): the allow answer says each one's value, so that the proxy sets it, whatever
    // the client sent.
    const owned = versionOf(exchange).ownHeaders.request;
    door.allowHeaders(exchange, headers, owned, upstreamTarget);
    headers["content-length"] = 0;
    headers["cache-control"] = "no-store";
    exchange.res.writeHead(200, headers);
    exchange.res.end();
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
      repliesOf(exchange).refuse(exchange, error, true);
      return true;
    },
    endAtDeadline(res) {
      const exchange = exchangeOf(res);
      if (exchange && !exchange.finished && !res.headersSent && res.writable) {
        return repliesOf(exchange).refuse(exchange, gatewayError("SHUTTING_DOWN"), true);
      }
      if (exchange && !exchange.finished) exchange.facts.cutAtDeadline = true;
      res.socket?.destroy();
    },
    drain() {
      draining = true;
    },
    close() {
      // No upstream: nothing to let go.
    },
  };
}

const NO_BODY = Buffer.alloc(0);

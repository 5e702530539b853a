// The end of every request, rejected or proxied or failed upstream, whoever ended it: counted out
// of its connection, the backend let go, and the one observe step (Kong's log phase): the HTTP
// metrics and one access log line. Metrics and the log are not policies.
import type { ServerResponse } from "node:http";
import type { Logger } from "pino";
import { loggedPath } from "../logged-path.ts";
import { flatLineLogger } from "../logger.ts";
import { type Metrics, type StatusLabels, statusLabel, UNMATCHED } from "../metrics.ts";
import type { Tracing } from "../tracing/index.ts";
import type { CoreExchange } from "./exchange.ts";
import { exchangeOf } from "./exchange.ts";

/** The handler for every response's 'close': shared by all requests, it finds the exchange on the response. */
export function createObserve(
  metrics: Metrics,
  logger: Logger,
  abandonUpstream: (exchange: CoreExchange) => void,
  /** The connection's bookkeeping once an answer is out (or cut): held bytes, requests in flight. */
  answerClosed: (exchange: CoreExchange) => void,
  /** The label of a status the backend gave (bounded: see createStatusLabels). */
  backendStatusLabel: StatusLabels,
  tracing?: Tracing,
): (this: ServerResponse) => void {
  const accessLog = flatLineLogger(logger);

  // The one observe step every request ends in: metrics and the access log line.
  function observe(exchange: CoreExchange, status: number, path: string): void {
    const operation = exchange.operation?.id ?? UNMATCHED;
    const method = exchange.req.method ?? "";
    const end = performance.now();
    const seconds = (end - exchange.startedAt) / 1000;
    const { rejection } = exchange;
    // The gateway's own answers have statuses its code bounds; the backend's are anybody's.
    const own = rejection !== undefined || exchange.upstreamStatus === 0;
    metrics.observeRequest(
      operation,
      method,
      own ? statusLabel(status) : backendStatusLabel(exchange.operation, status),
      seconds,
      tracing?.exemplarOf(exchange),
    );
    if (rejection) metrics.observeRejection(operation, rejection.reason, rejection.code);
    let upstreamMs: number | undefined;
    if (exchange.upstreamStartedAt !== 0 && exchange.upstreamStatus !== 0) {
      upstreamMs = exchange.upstreamEndedAt - exchange.upstreamStartedAt;
      metrics.observeUpstream(
        operation,
        method,
        backendStatusLabel(exchange.operation, exchange.upstreamStatus),
        upstreamMs / 1000,
      );
      metrics.observeOverhead(operation, seconds - upstreamMs / 1000);
    }
    // Flat on purpose (see flatLineLogger), but for the policies' notes: under a name of their
    // own, a note can never replace a field of the core's.
    accessLog.info(
      {
        reqId: exchange.requestId,
        operation,
        method,
        path,
        status,
        durationMs: round(end - exchange.startedAt),
        upstreamMs: upstreamMs === undefined ? undefined : round(upstreamMs),
        upstreamStatus: exchange.upstreamStatus || undefined,
        consumer: exchange.consumer,
        trace_id: exchange.traceId,
        span_id: exchange.spanId,
        code: rejection?.code,
        reason: rejection?.reason,
        ...exchange.facts,
        notes: hasAny(exchange.notes) ? exchange.notes : undefined,
      },
      "request",
    );
  }

  return function onResponseClose(this: ServerResponse): void {
    const exchange = exchangeOf(this);
    if (!exchange) return;
    answerClosed(exchange);
    if (exchange.finished) return;
    exchange.finished = true;
    if (exchange.upstreamStartedAt !== 0 && exchange.upstreamEndedAt === 0) abandonUpstream(exchange);
    let status = exchange.carriedStatus || this.statusCode;
    if (!this.writableFinished) {
      exchange.facts.aborted = true;
      // Cut mid-answer: by the shutdown deadline (the status the client was getting), by the
      // backend (a fault, counted as 502) or by the client (499).
      if (exchange.facts.cutAtDeadline === true) status = this.headersSent ? this.statusCode : 503;
      else status = this.headersSent && exchange.facts.upstreamFault !== undefined ? 502 : 499;
    }
    // Redacted once for the access line and the server span (a scan of the client's target).
    const path = loggedPath(exchange.url, exchange);
    observe(exchange, status, path);
    if (tracing !== undefined) tracing.end(exchange, status, path);
  };
}

function hasAny(record: object): boolean {
  for (const _ in record) return true;
  return false;
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

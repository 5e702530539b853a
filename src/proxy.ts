// The way to the backend: an undici Pool of keep-alive connections, the backend's own base path
// honoured, and the gateway's own deadline. Faults are classified here and handed back to the
// pipeline; nothing here writes to the client.
//
// undici's `dispatch` with a handler object, not `Pool#stream` or `Pool#request`: the handler gets
// the head and each chunk as calls, with no stream between the socket and the gateway, and pauses
// the socket through its controller. Measured by scripts/bench/upstream-api.ts (a microbenchmark,
// each proxy in its own process, 6 interleaved rounds on a shared 2-core machine, so read as
// ratios): proxy CPU per request against `dispatch`'s, `stream` 1.25 and `request` 1.20 for a
// 20-animal page held whole, 1.28 and 1.26 streamed. The handler is one object per attempt, which
// also carries the answer the pipeline reads (UpstreamResponse): nothing else is made per request.
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import net from "node:net";
import type { Readable } from "node:stream";
import tls from "node:tls";
import { type Dispatcher, Pool } from "undici";
import type { GatewayConfig } from "./config-schema.ts";
import type { CoreExchange } from "./pipeline/exchange.ts";
import { withoutTrailingSlashes } from "./trailing-slashes.ts";

export type UpstreamFault = "unavailable" | "timeout";

/** Where the body of the backend's answer goes, chunk by chunk, once its head was read. */
export interface BodySink {
  data(chunk: Buffer): void;
  end(): void;
  /** The answer broke after its head: a reset, a bad chunk, a body cut short. */
  error(): void;
}

/** The backend's answer as the pipeline reads it: its head, then its body through a sink. */
export interface UpstreamResponse {
  readonly statusCode: number;
  /** As Node's own client gives them: names lower-cased, repeats joined (Set-Cookie stays a list). */
  readonly headers: IncomingHttpHeaders;
  /** Set by onResponse before it returns, unless it destroys the answer. */
  sink: BodySink;
  /** Stops reading from the backend's socket until resume() (back-pressure). */
  pause(): void;
  resume(): void;
  /** Gives up on the answer: the backend request is aborted and its socket closed. */
  destroy(): void;
}

export interface UpstreamHandlers {
  onResponse(exchange: CoreExchange, response: UpstreamResponse): void;
  onFault(exchange: CoreExchange, fault: UpstreamFault, detail: string): void;
  onConnected(ok: boolean): void;
}

export interface Upstream {
  /**
   * req.url must already hold the backend-relative path and query (e.g. "/pets?limit=20"). The
   * body is the one the gateway read; without one, a body the request has streams as it comes.
   */
  forward(exchange: CoreExchange, body: Buffer | undefined): void;
  /** Stops waiting for the backend of an exchange that was answered some other way. */
  abandon(exchange: CoreExchange): void;
  close(): void;
}

interface InFlight {
  attempt: Attempt | undefined;
  deadline: NodeJS.Timeout | undefined;
  retried: boolean;
  responding: boolean;
  /** Answered, failed or given up: later events of the backend request change nothing. */
  settled: boolean;
  body: Buffer | Readable | undefined;
}

const IN_FLIGHT = Symbol("upstream");
type WithInFlight = CoreExchange & { [IN_FLIGHT]?: InFlight };
const IDEMPOTENT = new Set(["GET", "HEAD"]);
const CONNECT_FAILURES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "UND_ERR_CONNECT_TIMEOUT",
]);
// The connection went away under a request: a reset, a write to a closed socket, or undici's
// "other side closed" (a FIN, as from a backend's own idle timeout).
const DROPPED = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);
const ABANDONED = new Error("the gateway no longer waits for this answer");
const NO_SINK: BodySink = { data() {}, end() {}, error() {} };

interface Leg {
  readonly pool: Pool;
  readonly retryPool: Pool;
  readonly path: string;
  readonly host: string;
  readonly handlers: UpstreamHandlers;
  connected(ok: boolean): void;
}

export function createUpstream(
  url: string,
  options: GatewayConfig["upstream"],
  handlers: UpstreamHandlers,
): Upstream {
  const target = new URL(url);
  // The backend's base path, without a trailing "/": the URL itself would turn "" back into "/".
  const basePath = withoutTrailingSlashes(target.pathname);
  target.pathname = basePath;
  const poolOptions = upstreamPoolOptions(options);
  // undici's Pool gives a request the first connection in its list that is free, so under a
  // light load the same few stay warm and the rest reach the idle timeout and close: what the
  // LIFO scheduling of Node's agent was for.
  const pool = new Pool(target.origin, poolOptions);
  // The one retry goes out on a new connection, closed after it: when the backend dropped one
  // socket (a restart, its own idle timeout), the others in the pool are likely stale too.
  const retryPool = new Pool(target.origin, poolOptions);

  // gateway_upstream_up follows the requests; without any, a connect at start-up and then once
  // per interval keeps it true (a gauge reading 0 on every idle replica would page someone). For
  // an https backend the probe completes the TLS handshake, as a request must.
  let forwardedSinceProbe = false;
  let probing: net.Socket | undefined;
  let closed = false;
  // A request's outcome is newer than that of a probe that started before it: the probe's is dropped.
  let outcomes = 0;
  const connected = (ok: boolean) => {
    outcomes++;
    handlers.onConnected(ok);
  };
  const host = target.hostname.replace(/^\[|\]$/g, "");
  const secure = target.protocol === "https:";
  const port = Number(target.port) || (secure ? 443 : 80);
  const probe = () => {
    if (probing || closed) return;
    const startedAfter = outcomes;
    const settleProbe = (ok: boolean) => {
      if (outcomes === startedAfter) connected(ok);
    };
    const socket = secure
      ? tls.connect({ host, port, ...(net.isIP(host) === 0 ? { servername: host } : {}) })
      : net.connect({ host, port });
    probing = socket;
    socket.unref();
    socket.setTimeout(options.connectTimeoutMs, () => socket.destroy(new Error("connect timeout")));
    socket.once(secure ? "secureConnect" : "connect", () => {
      settleProbe(true);
      socket.destroy();
    });
    socket.once("error", () => settleProbe(false));
    socket.once("close", () => {
      probing = undefined;
    });
  };
  const prober =
    options.probeIntervalMs > 0
      ? setInterval(() => {
          if (!forwardedSinceProbe) probe();
          forwardedSinceProbe = false;
        }, options.probeIntervalMs).unref()
      : undefined;
  if (prober) setImmediate(probe);

  const leg: Leg = { pool, retryPool, path: basePath, host: target.host, handlers, connected };

  // The gateway's own timer answers, whatever the backend request is doing (connecting, queued
  // for a socket, waiting for a head, streaming a body): no answer ever waits on the backend.
  const onDeadline = (exchange: CoreExchange) => {
    const flight = (exchange as WithInFlight)[IN_FLIGHT];
    if (!flight || flight.settled || exchange.finished) return;
    settle(exchange, flight);
    const attempt = flight.attempt;
    // Buffered: nothing reached the client yet and it gets 504; streamed: the answer is cut so it
    // cannot look complete. Still queued: the request is aborted when a socket comes.
    handlers.onFault(
      exchange,
      "timeout",
      flight.responding
        ? "response deadline (body incomplete)"
        : attempt?.started
          ? "response deadline"
          : "response deadline (waiting for a backend socket)",
    );
    attempt?.destroy();
  };

  return {
    forward(exchange, body) {
      const flight: InFlight = {
        attempt: undefined,
        deadline: undefined,
        retried: false,
        responding: false,
        settled: false,
        body: body ?? unreadBody(exchange.req),
      };
      (exchange as WithInFlight)[IN_FLIGHT] = flight;
      forwardedSinceProbe = true;
      flight.deadline = setTimeout(onDeadline, options.timeoutMs, exchange);
      exchange.upstreamStartedAt = performance.now();
      send(leg, exchange, flight);
    },
    abandon(exchange) {
      const flight = (exchange as WithInFlight)[IN_FLIGHT];
      if (!flight) return;
      settle(exchange, flight);
      flight.attempt?.destroy();
    },
    close() {
      closed = true;
      clearInterval(prober);
      probing?.destroy();
      // Whatever is still in flight fails now (its exchange is settled or about to be).
      pool.destroy().catch(() => undefined);
      retryPool.destroy().catch(() => undefined);
    },
  };
}

/** The Pool's settings from upstream.*: the gateway's, and the benchmark's undici proxies' (scripts/bench). */
export function upstreamPoolOptions(options: GatewayConfig["upstream"]): Pool.Options {
  return {
    connections: options.maxSockets,
    // One request at a time per connection, as Node's agent: a pipelined request behind a slow
    // answer would wait on it, and a reset would take both.
    pipelining: 1,
    // A backend's Keep-Alive hint may shorten the idle time, never lengthen it.
    keepAliveTimeout: options.idleSocketTimeoutMs,
    keepAliveMaxTimeout: options.idleSocketTimeoutMs,
    // The gateway's own timer covers the whole answer (onDeadline): undici's would be a second,
    // coarser one per request (300 s by default), so both are off.
    headersTimeout: 0,
    bodyTimeout: 0,
    // Certificates are verified against Node's authorities, NODE_EXTRA_CA_CERTS included.
    connect: { timeout: options.connectTimeoutMs },
  };
}

function send(leg: Leg, exchange: CoreExchange, flight: InFlight): void {
  const attempt = new Attempt(leg, exchange, flight);
  flight.attempt = attempt;
  const { req } = exchange;
  const headers = req.headers;
  // As http-proxy-3's changeOrigin did: the backend is asked for by its own name.
  headers.host = leg.host;
  const options: Dispatcher.DispatchOptions = {
    path: `${leg.path}${req.url ?? "/"}`,
    method: (req.method ?? "GET") as Dispatcher.HttpMethod,
    headers,
    body: flight.body ?? null,
  };
  if (flight.retried) {
    options.reset = true;
    leg.retryPool.dispatch(options, attempt);
  } else leg.pool.dispatch(options, attempt);
}

/**
 * One request to the backend (the first, or the one retry): undici's handler, and the answer the
 * pipeline reads. Its events count only while it is the exchange's live attempt.
 */
class Attempt implements Dispatcher.DispatchHandler, UpstreamResponse {
  statusCode = 0;
  headers: IncomingHttpHeaders = {};
  sink: BodySink = NO_SINK;
  /** Written to a backend connection. */
  started = false;
  /** A byte of the answer arrived: from then on it is never sent again. */
  private begun = false;
  /** Its events change nothing any more (given up, failed, or the answer ended). */
  private done = false;
  private controller: Dispatcher.DispatchController | undefined = undefined;
  private readonly leg: Leg;
  private readonly exchange: CoreExchange;
  private readonly flight: InFlight;

  constructor(leg: Leg, exchange: CoreExchange, flight: InFlight) {
    this.leg = leg;
    this.exchange = exchange;
    this.flight = flight;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    this.started = true;
    // Given up while it waited for a connection: it goes no further.
    if (this.done || this.flight.settled || this.exchange.finished) this.destroy();
  }

  onResponseStarted(): void {
    this.begun = true;
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (this.done) return;
    if (this.flight.settled || this.exchange.finished) return this.destroy();
    this.flight.responding = true;
    this.statusCode = statusCode;
    this.headers = asNodeGivesThem(headers);
    this.leg.connected(true);
    this.leg.handlers.onResponse(this.exchange, this);
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.done) this.sink.data(chunk);
  }

  onResponseEnd(): void {
    if (this.done) return;
    this.done = true;
    this.sink.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    if (this.done) return;
    this.done = true;
    const { exchange, flight, leg } = this;
    if (exchange.finished) return;
    // Mid-answer (a bodyless one is settled at its head, and still owed its end).
    if (flight.responding) {
      settle(exchange, flight);
      return this.sink.error();
    }
    if (flight.settled) return;
    const code = (error as NodeJS.ErrnoException).code ?? "";
    if (CONNECT_FAILURES.has(code) || isTlsFailure(code)) leg.connected(false);
    // The connection went away before any byte of an answer (most often a kept-alive socket the
    // backend closed just as it was reused): a GET or HEAD is safe to send once more, on a new
    // connection. Never a POST, nor a body already streamed.
    if (
      DROPPED.has(code) &&
      !this.begun &&
      !flight.retried &&
      IDEMPOTENT.has(exchange.req.method ?? "") &&
      !isStream(flight.body)
    ) {
      flight.retried = true;
      return send(leg, exchange, flight);
    }
    settle(exchange, flight);
    if (code === "UND_ERR_CONNECT_TIMEOUT") leg.handlers.onFault(exchange, "timeout", "connect timeout");
    else leg.handlers.onFault(exchange, "unavailable", code || error.message);
  }

  pause(): void {
    this.controller?.pause();
  }

  resume(): void {
    this.controller?.resume();
  }

  destroy(): void {
    this.done = true;
    this.sink = NO_SINK;
    // Not yet written to a connection: aborted in onRequestStart, when a connection comes.
    this.controller?.abort(ABANDONED);
  }
}

/** Called when the answer is complete (or handed to the client): stops the deadline. */
export function upstreamDone(exchange: CoreExchange): void {
  const flight = (exchange as WithInFlight)[IN_FLIGHT];
  if (flight) settle(exchange, flight);
  else exchange.upstreamEndedAt = performance.now();
}

/** Answered, failed or given up: the deadline stops and later backend events change nothing. */
function settle(exchange: CoreExchange, flight: InFlight): void {
  if (flight.settled) return;
  flight.settled = true;
  if (flight.deadline) clearTimeout(flight.deadline);
  flight.deadline = undefined;
  exchange.upstreamEndedAt = performance.now();
}

// Node's client keeps the first of these when a backend repeats them (its IncomingMessage rules).
const FIRST_ONLY = new Set([
  "age",
  "authorization",
  "content-length",
  "content-type",
  "etag",
  "expires",
  "from",
  "host",
  "if-modified-since",
  "if-unmodified-since",
  "last-modified",
  "location",
  "max-forwards",
  "proxy-authorization",
  "referer",
  "retry-after",
  "server",
  "user-agent",
]);

/**
 * undici gives a repeated header as a list; the pipeline, its policies and the client's answer
 * read headers as Node's own client gives them: the first of a header that must be single (a
 * second Content-Type is not a list), Set-Cookie as a list, any other joined with ", ".
 */
export function asNodeGivesThem(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  for (const name in headers) {
    const value = headers[name];
    if (name === "set-cookie") {
      if (typeof value === "string") headers[name] = [value];
      continue;
    }
    if (!Array.isArray(value)) continue;
    headers[name] = FIRST_ONLY.has(name) ? value[0] : value.join(name === "cookie" ? "; " : ", ");
  }
  return headers;
}

/** A certificate the gateway does not trust, or no TLS to agree on: the backend is not reached. */
function isTlsFailure(code: string): boolean {
  return (
    code.startsWith("ERR_TLS_") ||
    code.startsWith("ERR_SSL_") ||
    code.includes("CERT") ||
    code === "UNABLE_TO_VERIFY_LEAF_SIGNATURE"
  );
}

/**
 * The request itself, when it has a body the gateway did not read (the operation declares none
 * and no policy refused it): it streams to the backend with back-pressure. Its Transfer-Encoding
 * is gone from the headers by now (hop-by-hop), so chunked framing is read from the raw ones.
 */
function unreadBody(req: IncomingMessage): Readable | undefined {
  const length = req.headers["content-length"];
  if (length !== undefined) return length === "0" ? undefined : req;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 17 && name.toLowerCase() === "transfer-encoding") return req;
  }
  return undefined;
}

function isStream(body: Buffer | Readable | undefined): boolean {
  return body !== undefined && !Buffer.isBuffer(body);
}

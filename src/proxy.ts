// The way to the backend: one http-proxy-3 server with a bounded keep-alive agent, the backend's
// own base path honoured, and the gateway's own deadline. Faults are classified here and handed
// back to the pipeline; nothing here writes to the client.
import http, { type ClientRequest, type IncomingMessage, type ServerResponse } from "node:http";
import https from "node:https";
import net from "node:net";
import { Readable } from "node:stream";
import tls from "node:tls";
import { createProxyServer } from "http-proxy-3";
import type { GatewayConfig } from "./config-schema.ts";
import type { CoreExchange } from "./pipeline/exchange.ts";

export type UpstreamFault = "unavailable" | "timeout";

export interface UpstreamHandlers {
  onResponse(exchange: CoreExchange, response: IncomingMessage): void;
  onFault(exchange: CoreExchange, fault: UpstreamFault, detail: string): void;
  onConnected(ok: boolean): void;
}

export interface Upstream {
  readonly url: URL;
  /** req.url must already hold the backend-relative path and query (e.g. "/pets?limit=20"). */
  forward(exchange: CoreExchange, body: Buffer | undefined): void;
  /** Stops waiting for the backend of an exchange that was answered some other way. */
  abandon(exchange: CoreExchange): void;
  close(): void;
}

interface InFlight {
  proxyReq: ClientRequest | undefined;
  deadline: NodeJS.Timeout | undefined;
  retried: boolean;
  responding: boolean;
  /** Answered, failed or given up: later events of the backend request change nothing. */
  settled: boolean;
  body: Buffer | undefined;
}

const IN_FLIGHT = Symbol("upstream");
type WithInFlight = CoreExchange & { [IN_FLIGHT]?: InFlight };
type Live = CoreExchange & { [IN_FLIGHT]: InFlight };
const IDEMPOTENT = new Set(["GET", "HEAD"]);
const CONNECT_FAILURES = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

export function createUpstream(
  url: string,
  options: GatewayConfig["upstream"],
  exchangeOf: (req: IncomingMessage) => CoreExchange | undefined,
  handlers: UpstreamHandlers,
): Upstream {
  const target = new URL(url);
  target.pathname = target.pathname.replace(/\/+$/, "");
  // An https backend needs TLS sockets: http-proxy-3 refuses a plain agent for it, on every request.
  const Agent = target.protocol === "https:" ? https.Agent : http.Agent;
  const agent = new Agent({
    keepAlive: true,
    maxSockets: options.maxSockets,
    maxFreeSockets: options.maxFreeSockets,
    timeout: options.idleSocketTimeoutMs,
    scheduling: "lifo",
  });
  // The one retry goes out on a new connection: when the backend dropped one idle socket (a
  // restart, its own idle timeout), the others in the pool are likely stale too.
  const retryAgent = new Agent({ keepAlive: false, maxSockets: options.maxSockets });

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
    const settle = (ok: boolean) => {
      if (outcomes === startedAfter) connected(ok);
    };
    const socket = secure
      ? tls.connect({ host, port, ...(net.isIP(host) === 0 ? { servername: host } : {}) })
      : net.connect({ host, port });
    probing = socket;
    socket.unref();
    socket.setTimeout(options.connectTimeoutMs, () => socket.destroy(new Error("connect timeout")));
    socket.once(secure ? "secureConnect" : "connect", () => {
      settle(true);
      socket.destroy();
    });
    socket.once("error", () => settle(false));
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
  const proxy = createProxyServer({
    target,
    agent,
    selfHandleResponse: true,
    changeOrigin: true,
    xfwd: false,
    connectTimeout: options.connectTimeoutMs,
  });

  proxy.on("proxyReq", (proxyReq: ClientRequest, req: IncomingMessage) => {
    const exchange = exchangeOf(req);
    if (!isLive(exchange)) {
      proxyReq.destroy();
      return;
    }
    const flight = exchange[IN_FLIGHT];
    flight.proxyReq = proxyReq;
    exchange.upstreamStartedAt = performance.now();
    // Node's client can end a request with neither an answer nor an error (it takes an
    // unsolicited 101 as an upgrade and drops the socket): that is a failed backend too.
    proxyReq.once("close", () => {
      if (flight.settled || flight.responding || flight.proxyReq !== proxyReq) return;
      const error: NodeJS.ErrnoException = new Error("the backend closed the connection without an answer");
      error.code = "ECONNRESET";
      onError(error, req);
    });
  });

  proxy.on("proxyRes", (proxyRes: IncomingMessage, req: IncomingMessage) => {
    const exchange = exchangeOf(req);
    if (!isLive(exchange)) {
      proxyRes.destroy();
      return;
    }
    exchange[IN_FLIGHT].responding = true;
    connected(true);
    handlers.onResponse(exchange, proxyRes);
  });

  // Takes what http-proxy-3 hands its error callback, so one function serves every request.
  const onError = (error: Error, req: IncomingMessage) => {
    const exchange = exchangeOf(req);
    if (!isLive(exchange)) return;
    const flight = exchange[IN_FLIGHT];
    const code = (error as NodeJS.ErrnoException).code ?? "";
    if (code === "ECONNECT_TIMEOUT" || CONNECT_FAILURES.has(code) || isTlsFailure(code)) connected(false);
    // A kept-alive socket the backend closed just as we reused it, before any byte of an answer:
    // an idempotent request is safe to send once more, on a fresh socket. Never a POST.
    if (
      (code === "ECONNRESET" || code === "EPIPE") &&
      !flight.retried &&
      !flight.responding &&
      flight.proxyReq?.reusedSocket === true &&
      IDEMPOTENT.has(exchange.req.method ?? "")
    ) {
      flight.retried = true;
      flight.proxyReq = undefined;
      send(exchange, flight);
      return;
    }
    settle(exchange, flight);
    if (code === "ECONNECT_TIMEOUT") handlers.onFault(exchange, "timeout", "connect timeout");
    else handlers.onFault(exchange, "unavailable", code || error.message);
  };
  // Without a listener http-proxy-3 would rethrow; every error is routed to its exchange.
  proxy.on("error", onError);

  // The gateway's own timer answers, whatever the backend request is doing (connecting, queued
  // for a socket, waiting for a head, streaming a body): no answer ever waits on the backend.
  const onDeadline = (exchange: CoreExchange) => {
    if (!isLive(exchange)) return;
    const flight = exchange[IN_FLIGHT];
    settle(exchange, flight);
    const pending = flight.proxyReq;
    // Buffered: nothing reached the client yet and it gets 504; streamed: the answer is cut so it
    // cannot look complete. Still queued: the request is destroyed when a socket comes.
    handlers.onFault(
      exchange,
      "timeout",
      flight.responding
        ? "response deadline (body incomplete)"
        : pending
          ? "response deadline"
          : "response deadline (waiting for a backend socket)",
    );
    pending?.destroy();
  };

  const send = (exchange: CoreExchange, flight: InFlight) => {
    const options: { buffer?: Readable; agent?: http.Agent | https.Agent } = {};
    if (flight.body !== undefined) options.buffer = Readable.from([flight.body]);
    if (flight.retried) options.agent = retryAgent;
    proxy.web(exchange.req, exchange.res as ServerResponse, options, onError);
  };

  return {
    url: target,
    forward(exchange, body) {
      const flight: InFlight = {
        proxyReq: undefined,
        deadline: undefined,
        retried: false,
        responding: false,
        settled: false,
        body,
      };
      (exchange as WithInFlight)[IN_FLIGHT] = flight;
      forwardedSinceProbe = true;
      flight.deadline = setTimeout(onDeadline, options.timeoutMs, exchange);
      exchange.upstreamStartedAt = performance.now();
      send(exchange, flight);
    },
    abandon(exchange) {
      const flight = (exchange as WithInFlight)[IN_FLIGHT];
      if (!flight) return;
      settle(exchange, flight);
      flight.proxyReq?.destroy();
    },
    close() {
      closed = true;
      clearInterval(prober);
      probing?.destroy();
      agent.destroy();
      retryAgent.destroy();
      proxy.close();
    },
  };
}

/** Called when the answer is complete (or handed to the client): stops the deadline. */
export function upstreamDone(exchange: CoreExchange): void {
  const flight = (exchange as WithInFlight)[IN_FLIGHT];
  if (flight) settle(exchange, flight);
  else exchange.upstreamEndedAt = performance.now();
}

/** Answered, failed or given up: the deadline stops and later backend events change nothing. */
function settle(exchange: CoreExchange, flight: InFlight): void {
  flight.settled = true;
  if (flight.deadline) clearTimeout(flight.deadline);
  flight.deadline = undefined;
  exchange.upstreamEndedAt = performance.now();
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

/** True while an event of the exchange's backend request can still change anything. */
function isLive(exchange: WithInFlight | undefined): exchange is Live {
  const flight = exchange?.[IN_FLIGHT];
  return flight !== undefined && !flight.settled && !(exchange as CoreExchange).finished;
}

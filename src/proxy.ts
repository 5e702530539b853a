// The way to the backend: one http-proxy-3 server with a bounded keep-alive agent, the backend's
// own base path honoured, and the gateway's own deadline. Faults are classified here and handed
// back to the pipeline; nothing here writes to the client.
import http, { type ClientRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { createProxyServer } from "http-proxy-3";
import type { GatewayConfig } from "./config.ts";
import type { Exchange } from "./policy.ts";

export type UpstreamFault = "unavailable" | "timeout";

export interface UpstreamHandlers {
  onResponse(exchange: Exchange, response: IncomingMessage): void;
  onFault(exchange: Exchange, fault: UpstreamFault, detail: string): void;
  onConnected(ok: boolean): void;
}

export interface Upstream {
  readonly url: URL;
  /** req.url must already hold the backend-relative path and query (e.g. "/pets?limit=20"). */
  forward(exchange: Exchange, body: Buffer | undefined): void;
  /** Stops waiting for the backend of an exchange that was answered some other way. */
  abandon(exchange: Exchange): void;
  close(): void;
}

interface InFlight {
  proxyReq: ClientRequest | undefined;
  deadline: NodeJS.Timeout | undefined;
  timedOut: boolean;
  retried: boolean;
  responding: boolean;
  body: Buffer | undefined;
}

const IN_FLIGHT = Symbol("upstream");
type WithInFlight = Exchange & { [IN_FLIGHT]?: InFlight };
const IDEMPOTENT = new Set(["GET", "HEAD"]);
const CONNECT_FAILURES = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

export function createUpstream(
  url: string,
  options: GatewayConfig["upstream"],
  exchangeOf: (req: IncomingMessage) => Exchange | undefined,
  handlers: UpstreamHandlers,
): Upstream {
  const target = new URL(url);
  target.pathname = target.pathname.replace(/\/+$/, "");
  const agent = new http.Agent({
    keepAlive: true,
    maxSockets: options.maxSockets,
    maxFreeSockets: options.maxFreeSockets,
    timeout: options.idleSocketTimeoutMs,
    scheduling: "lifo",
  });
  const proxy = createProxyServer({
    target,
    agent,
    selfHandleResponse: true,
    changeOrigin: true,
    xfwd: false,
    connectTimeout: options.connectTimeoutMs,
  });

  proxy.on("proxyReq", (proxyReq: ClientRequest, req: IncomingMessage) => {
    const exchange = exchangeOf(req) as WithInFlight | undefined;
    const flight = exchange?.[IN_FLIGHT];
    if (!exchange || !flight || exchange.finished) {
      proxyReq.destroy();
      return;
    }
    flight.proxyReq = proxyReq;
    exchange.upstreamStartedAt = performance.now();
  });

  proxy.on("proxyRes", (proxyRes: IncomingMessage, req: IncomingMessage) => {
    const exchange = exchangeOf(req) as WithInFlight | undefined;
    const flight = exchange?.[IN_FLIGHT];
    if (!exchange || !flight || exchange.finished || flight.timedOut) {
      proxyRes.destroy();
      return;
    }
    flight.responding = true;
    handlers.onConnected(true);
    handlers.onResponse(exchange, proxyRes);
  });

  const onError = (error: NodeJS.ErrnoException, req: IncomingMessage) => {
    const exchange = exchangeOf(req) as WithInFlight | undefined;
    const flight = exchange?.[IN_FLIGHT];
    if (!exchange || !flight || exchange.finished) return;
    const code = error.code ?? "";
    if (code === "ECONNECT_TIMEOUT" || CONNECT_FAILURES.has(code)) handlers.onConnected(false);
    // A kept-alive socket the backend closed just as we reused it: nothing reached the backend's
    // handler, so an idempotent request is safe to send once more on a fresh socket.
    if (
      code === "ECONNRESET" &&
      !flight.timedOut &&
      !flight.retried &&
      flight.proxyReq?.reusedSocket === true &&
      IDEMPOTENT.has(exchange.req.method ?? "")
    ) {
      flight.retried = true;
      flight.proxyReq = undefined;
      send(exchange, flight);
      return;
    }
    stop(exchange, flight);
    if (flight.timedOut || code === "ECONNECT_TIMEOUT") {
      handlers.onFault(
        exchange,
        "timeout",
        code === "ECONNECT_TIMEOUT" ? "connect timeout" : "response deadline",
      );
    } else {
      handlers.onFault(exchange, "unavailable", code || error.message);
    }
  };
  // Without a listener http-proxy-3 would rethrow; every error is routed to its exchange.
  proxy.on("error", (error: Error, req: IncomingMessage) => onError(error as NodeJS.ErrnoException, req));

  const onDeadline = (exchange: WithInFlight) => {
    const flight = exchange[IN_FLIGHT];
    if (!flight || exchange.finished) return;
    flight.timedOut = true;
    if (flight.responding) {
      // Headers came but the body is still being buffered: nothing reached the client yet.
      stop(exchange, flight);
      flight.proxyReq?.destroy();
      handlers.onFault(exchange, "timeout", "response deadline (body incomplete)");
    } else if (flight.proxyReq) flight.proxyReq.destroy();
    else {
      // Still queued for a socket: answer now; the request is destroyed when a socket comes.
      stop(exchange, flight);
      handlers.onFault(exchange, "timeout", "response deadline (waiting for a backend socket)");
    }
  };

  const send = (exchange: WithInFlight, flight: InFlight) => {
    const buffer = flight.body === undefined ? undefined : Readable.from([flight.body]);
    proxy.web(exchange.req, exchange.res as ServerResponse, buffer ? { buffer } : {}, (error: Error) =>
      onError(error as NodeJS.ErrnoException, exchange.req),
    );
  };

  const stop = (exchange: WithInFlight, flight: InFlight) => {
    if (flight.deadline) clearTimeout(flight.deadline);
    flight.deadline = undefined;
    exchange.upstreamEndedAt = performance.now();
  };

  return {
    url: target,
    forward(exchange, body) {
      const flight: InFlight = {
        proxyReq: undefined,
        deadline: undefined,
        timedOut: false,
        retried: false,
        responding: false,
        body,
      };
      (exchange as WithInFlight)[IN_FLIGHT] = flight;
      flight.deadline = setTimeout(onDeadline, options.timeoutMs, exchange);
      exchange.upstreamStartedAt = performance.now();
      send(exchange as WithInFlight, flight);
    },
    abandon(exchange) {
      const flight = (exchange as WithInFlight)[IN_FLIGHT];
      if (!flight) return;
      stop(exchange, flight);
      flight.proxyReq?.destroy();
    },
    close() {
      agent.destroy();
      proxy.close();
    },
  };
}

/** Called when the answer is complete (or handed to the client): stops the deadline. */
export function upstreamDone(exchange: Exchange): void {
  const flight = (exchange as WithInFlight)[IN_FLIGHT];
  if (flight?.deadline) clearTimeout(flight.deadline);
  if (flight) flight.deadline = undefined;
  exchange.upstreamEndedAt = performance.now();
}

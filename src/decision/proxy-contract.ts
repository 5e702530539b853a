// What a generated proxy config is made from: the document (its base path, which operations take
// a body, the header parameters it declares), the gateway's config (the body cap) and the headers
// the gateway owns in each direction, plus the two addresses the operator gives.
import type { GatewayConfig } from "../config-schema.ts";
import type { ApiDescription } from "../openapi.ts";
import { SPOOFABLE } from "../pipeline/canonical-request.ts";
import { CLAIMED_BY_PROXIES } from "../pipeline/request-headers.ts";
import { withoutTrailingSlashes } from "../trailing-slashes.ts";

export interface ProxyContract {
  /** The public base path ("/v1", or ""). */
  readonly basePath: string;
  readonly title: string;
  /** Request headers the policies set for the backend (the consumer, Authorization). */
  readonly upstreamHeaders: readonly string[];
  /** Response headers the gateway adds to the client's answer (lower case; nosniff and X-Request-Id aside). */
  readonly clientHeaders: readonly string[];
  /** Request headers the request side reads besides Authorization, Host and the path. */
  readonly judgedHeaders: readonly string[];
  /** What proxy mode never lets a client tell the backend (the backend gets none of them). */
  readonly droppedHeaders: readonly string[];
  readonly maxRequestBodyBytes: number;
  /**
   * The backend leg's timeouts, the gateway's own (upstream.connectTimeoutMs, upstream.timeoutMs):
   * a proxy that forwards to the backend gives up when proxy mode would, with its 504.
   */
  readonly upstreamConnectTimeoutMs: number;
  readonly upstreamTimeoutMs: number;
}

export interface ProxyAddresses {
  /** The decision service's origin, e.g. http://127.0.0.1:9000. */
  readonly decisionUrl: string;
  /** The backend with its base path, as UPSTREAM_URL: http://pets:3000/v1. */
  readonly upstreamUrl: string;
  readonly listenPort: number;
  /** How long the proxy waits for a decision before it fails closed. */
  readonly timeoutMs: number;
  /** HAProxy: where the config loads deploy/haproxy/gateway-decide.lua from. */
  readonly luaFile?: string;
}

// CORS's answer headers are not among those the policies declare (CORS is what exposes those).
const CORS_ANSWER_HEADERS = ["vary", "access-control-allow-origin", "access-control-expose-headers"];
// Read by the request side on every call: the body's media type and coding, CORS, the client's
// request id, trace context (the decision's span continues it, tracestate included), the
// deprecation log's user agent, a preflight's method.
const ALWAYS_JUDGED = [
  "content-type",
  "content-encoding",
  "origin",
  "access-control-request-method",
  "x-request-id",
  "traceparent",
  "tracestate",
  "user-agent",
];

export function proxyContract(
  api: ApiDescription,
  config: GatewayConfig,
  ownHeaders: { readonly request: readonly string[]; readonly response: readonly string[] },
): ProxyContract {
  const headerParameters = api.operations.flatMap((operation) =>
    operation.uncheckedParameters.filter((p) => p.in === "header").map((p) => p.name.toLowerCase()),
  );
  return {
    basePath: api.basePath,
    title: api.title,
    upstreamHeaders: ownHeaders.request,
    // The request id goes both ways, and every generator handles it on its own.
    clientHeaders: unique([...ownHeaders.response, ...CORS_ANSWER_HEADERS]).filter(
      (name) => name !== "x-request-id",
    ),
    judgedHeaders: unique([...ALWAYS_JUDGED, ...headerParameters]),
    droppedHeaders: unique([...SPOOFABLE, ...CLAIMED_BY_PROXIES]),
    maxRequestBodyBytes: config.server.maxRequestBodyBytes,
    upstreamConnectTimeoutMs: config.upstream.connectTimeoutMs,
    upstreamTimeoutMs: config.upstream.timeoutMs,
  };
}

/** Origin and path of a URL given on the command line; the path without its trailing slash. */
export function splitUrl(text: string): {
  readonly host: string;
  readonly port: number;
  readonly path: string;
} {
  const url = new URL(text);
  if (url.protocol !== "http:") throw new Error(`${text}: only http:// addresses are generated`);
  return {
    host: url.hostname,
    port: url.port === "" ? 80 : Number(url.port),
    path: withoutTrailingSlashes(url.pathname),
  };
}

function unique(names: readonly string[]): string[] {
  return [...new Set(names)];
}

// The front doors of decision mode: one fixed endpoint per proxy, each reading the original
// request only from what that proxy sets on every call (never guessed from the request's shape,
// never from a header a client could send through), and answering in the form that proxy acts on.
// A new proxy is one more door here and its config generator.
import type { IncomingMessage, OutgoingHttpHeaders } from "node:http";
import type { CoreExchange } from "../pipeline/exchange.ts";
import type { AnswerWriter } from "../pipeline/local-replies.ts";
import { type TrustedProxies, unmappedAddress } from "../trusted-proxies.ts";
import { PROXY_CAPABILITIES } from "./capabilities.ts";
import { carryAnswer } from "./carried-answer.ts";

/** Where every door lives: /decide/<proxy>. */
export const DECIDE_PREFIX = "/decide/";

/** The headers of an allow answer a proxy acts on (lower case). */
export const UPSTREAM_URI_HEADER = "x-gateway-upstream-uri";
/** nginx: the value the backend gets for an owned request header, `x-gateway-upstream-<name>`. */
export const UPSTREAM_HEADER_PREFIX = "x-gateway-upstream-";
/** Envoy: the owned request headers to remove from the request the backend gets. */
export const ENVOY_HEADERS_TO_REMOVE = "x-envoy-auth-headers-to-remove";

/** What nginx's generated config sets on every auth_request call, overwriting any client copy. */
export const NGINX_ORIGINAL = {
  method: "x-original-method",
  uri: "x-original-uri",
  contentLength: "x-original-content-length",
  transferEncoding: "x-original-transfer-encoding",
} as const;

export interface Door {
  readonly name: string;
  /**
   * Rewrites the check request into the original one (its method, target and body headers) and
   * returns the client's address as the proxy set it; or says what the proxy failed to send (the
   * call is refused: the proxy then fails closed).
   */
  enter(req: IncomingMessage): Entered;
  /** The proxy sends the request body along (Envoy's with_request_body): body phases run. */
  readonly readsBody: boolean;
  /** How a refusal or a local answer reaches the client through this proxy; undefined: as it is. */
  readonly carry: AnswerWriter | undefined;
  /**
   * The allow answer: adds to the client's headers (finishHeaders', in `headers`) what the backend
   * gets for each owned request header and the backend's target. Added in place: the answer is
   * written from this one object, never a copy of it.
   */
  allowHeaders(
    exchange: CoreExchange,
    headers: OutgoingHttpHeaders,
    ownedRequestHeaders: readonly string[],
    upstreamTarget: string,
  ): void;
}

/** A door's call, read: the client's address the proxy set, or what the proxy failed to send. */
export type Entered = { readonly forwardedFor: string } | { readonly problem: string };

/**
 * The client of a decision, by proxy mode's rule (src/pipeline/forward.ts): what a proxy says of
 * the client is believed only from a peer in server.trustedProxies, else the peer is the client.
 * Only the hop the proxy itself wrote counts, never one to the left of it (a client's own claim
 * when the proxy appends, as Envoy does), so no client-sent copy can steer it; hops in front of
 * the proxy are the proxy's own to judge (nginx's set_real_ip_from, Envoy's xff_num_trusted_hops).
 */
export function clientOfDecision(
  peerAddress: string,
  entered: Entered | undefined,
  isTrustedProxy: TrustedProxies,
): string {
  const peer = unmappedAddress(peerAddress);
  return entered !== undefined && "forwardedFor" in entered && isTrustedProxy(peer)
    ? entered.forwardedFor
    : peer;
}

/** Where a door finds the original request: names the proxy's generated config (or the proxy) sets. */
interface OriginalNames {
  readonly method: string;
  readonly uri: string;
  /** The client's Content-Length and Transfer-Encoding, for a proxy that sends the decision no body. */
  readonly contentLength?: string;
  readonly transferEncoding?: string;
}

/**
 * Reads the original request from headers the proxy sets on every call (overwriting any client
 * copy), and the client's address from the last X-Forwarded-For hop, which the proxy wrote
 * (believed from a trusted proxy only: clientOfDecision).
 * For a proxy that sends no body, what the client declared about its body goes where the request
 * phases read it; for one that sends the body, the call's own framing stays.
 */
function enterFrom(names: OriginalNames, proxy: string): Door["enter"] {
  const listed = Object.values(names);
  const carriesBody = names.contentLength === undefined;
  return (req) => {
    const { headers } = req;
    const method = headers[names.method];
    const uri = headers[names.uri];
    const address = lastHop(headers["x-forwarded-for"]);
    if (typeof method !== "string" || method === "" || typeof uri !== "string" || address === undefined) {
      return { problem: `${proxy} did not set ${listed.slice(0, 2).join(", ")} and X-Forwarded-For` };
    }
    const length = names.contentLength === undefined ? undefined : headers[names.contentLength];
    const coding = names.transferEncoding === undefined ? undefined : headers[names.transferEncoding];
    // Most of these are absent on a call (nginx sends no header it would set empty): looking first
    // spares a delete, which is a call into V8's runtime (1.5 % of a decision, perf) and turns the
    // headers into a slower dictionary for every later read.
    for (const name of listed) if (headers[name] !== undefined) delete headers[name];
    if (!carriesBody) {
      if (headers["content-length"] !== undefined) delete headers["content-length"];
      if (headers["transfer-encoding"] !== undefined) delete headers["transfer-encoding"];
      if (typeof length === "string" && length !== "") headers["content-length"] = length;
      if (typeof coding === "string" && coding !== "") headers["transfer-encoding"] = coding;
    }
    req.method = method;
    req.url = uri;
    return { forwardedFor: address };
  };
}

/** The allow answer of a proxy that reads each owned header under a name of the gateway's. */
const prefixedAllow: Door["allowHeaders"] = (exchange, headers, owned, upstreamTarget) => {
  headers[UPSTREAM_URI_HEADER] = upstreamTarget;
  for (const name of owned) {
    const value = exchange.headers[name];
    if (typeof value === "string") headers[`${UPSTREAM_HEADER_PREFIX}${name}`] = value;
  }
};

const NGINX: Door = {
  name: "nginx",
  enter: enterFrom(NGINX_ORIGINAL, "nginx"),
  readsBody: PROXY_CAPABILITIES.nginx.sendsBody,
  carry: carryAnswer,
  allowHeaders: prefixedAllow,
};

/** What Caddy's forward_auth sets (X-Forwarded-Method/-Uri, header_up Set) plus the generated config's length. */
export const CADDY_ORIGINAL = {
  method: "x-forwarded-method",
  uri: "x-forwarded-uri",
  contentLength: NGINX_ORIGINAL.contentLength,
} as const;

// forward_auth turns the call into a GET without the body; a refusal is copied back as it is.
const CADDY: Door = {
  name: "caddy",
  enter: enterFrom(CADDY_ORIGINAL, "Caddy"),
  readsBody: PROXY_CAPABILITIES.caddy.sendsBody,
  carry: undefined,
  allowHeaders(exchange, headers, owned, upstreamTarget) {
    // Caddy 2.6's rewrite expands placeholders again in a query that came from one: a brace is
    // never left for it to read (%7B and %7D mean the same to the backend).
    const target = upstreamTarget.replaceAll("{", "%7B").replaceAll("}", "%7D");
    prefixedAllow(exchange, headers, owned, target);
  },
};

/** What Traefik's forwardAuth sets on every call (never trustForwardHeader), overwriting any client copy. */
export const TRAEFIK_ORIGINAL = { method: "x-forwarded-method", uri: "x-forwarded-uri" } as const;

// forwardBody sends the body along; a refusal is copied back verbatim; authResponseHeaders delete
// each listed request header, then set it from the answer under its own name.
const TRAEFIK: Door = {
  name: "traefik",
  enter: enterFrom(TRAEFIK_ORIGINAL, "Traefik"),
  readsBody: PROXY_CAPABILITIES.traefik.sendsBody,
  carry: undefined,
  allowHeaders(exchange, headers, owned, upstreamTarget) {
    headers[UPSTREAM_URI_HEADER] = upstreamTarget;
    for (const name of owned) {
      const value = exchange.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
  },
};

// HAProxy's generated Lua action builds the call itself, with nginx's names; it answers a refusal
// from the decision's status, headers and body, and reads the owned headers under the prefix.
const HAPROXY: Door = {
  name: "haproxy",
  enter: enterFrom(NGINX_ORIGINAL, "HAProxy"),
  readsBody: PROXY_CAPABILITIES.haproxy.sendsBody,
  carry: undefined,
  allowHeaders: prefixedAllow,
};

/** The path prefix Envoy's generated config puts before the original path (http_service.path_prefix). */
export const ENVOY_PATH_PREFIX = `${DECIDE_PREFIX}envoy`;

const ENVOY: Door = {
  name: "envoy",
  enter(req) {
    // Envoy's HTTP ext_authz client sends the original method and path_prefix + the original path;
    // its connection manager (use_remote_address) appended the client's address to X-Forwarded-For.
    const url = req.url ?? "";
    const address = lastHop(req.headers["x-forwarded-for"]);
    if (address === undefined) return { problem: "Envoy did not send X-Forwarded-For" };
    req.url = url.slice(ENVOY_PATH_PREFIX.length);
    return { forwardedFor: address };
  },
  readsBody: PROXY_CAPABILITIES.envoy.sendsBody,
  carry: undefined,
  allowHeaders(exchange, headers, owned, upstreamTarget) {
    headers[UPSTREAM_URI_HEADER] = upstreamTarget;
    const removed: string[] = [];
    for (const name of owned) {
      const value = exchange.headers[name];
      if (typeof value === "string") headers[name] = value;
      else removed.push(name);
    }
    if (removed.length > 0) headers[ENVOY_HEADERS_TO_REMOVE] = removed.join(",");
  },
};

const DOORS: ReadonlyMap<string, Door> = new Map(
  [NGINX, ENVOY, CADDY, TRAEFIK, HAPROXY].map((door) => [door.name, door]),
);

/** The proxies that have a door, for the config generator and the docs. */
export const PROXIES: readonly string[] = [...DOORS.keys()];

/** What a request to the decision port asks for: a door's decision, nginx's render, or nothing. */
export type Call =
  | { readonly kind: "decide"; readonly door: Door }
  | { readonly kind: "render" }
  | { readonly kind: "none" };

/** The path nginx's @deny location calls to have a carried answer written (carried-answer.ts). */
export const NGINX_RENDER_PATH = `${DECIDE_PREFIX}nginx/deny`;

export function callOf(url: string): Call {
  const query = url.indexOf("?");
  const path = query === -1 ? url : url.slice(0, query);
  if (path === NGINX_RENDER_PATH) return { kind: "render" };
  if (path.startsWith(DECIDE_PREFIX) && path.indexOf("/", DECIDE_PREFIX.length) === -1) {
    const door = DOORS.get(path.slice(DECIDE_PREFIX.length));
    // Envoy's door is a prefix: the original path follows it.
    if (door !== undefined && door !== ENVOY) return { kind: "decide", door };
  }
  // Envoy's path is the prefix followed by the original path, which starts with '/'.
  if (path.startsWith(`${ENVOY_PATH_PREFIX}/`)) return { kind: "decide", door: ENVOY };
  return { kind: "none" };
}

export function doorNamed(name: string): Door | undefined {
  return DOORS.get(name);
}

/** The rightmost X-Forwarded-For hop: the one the proxy itself wrote (or appended). */
function lastHop(value: string | string[] | undefined): string | undefined {
  if (typeof value !== "string") return undefined;
  const comma = value.lastIndexOf(",");
  const hop = (comma === -1 ? value : value.slice(comma + 1)).trim();
  return hop === "" ? undefined : unmappedAddress(hop);
}

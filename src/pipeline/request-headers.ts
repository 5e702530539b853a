// What of a client's headers the backend may believe. Two kinds of look-alike reach a backend
// that trusts its gateway:
// - a name a backend folds onto another: CGI, WSGI, Rack and PHP turn X-Consumer and x_consumer
//   alike into HTTP_X_CONSUMER, so a client's x_consumer can stand beside, or win over, the
//   X-Consumer the gateway set. Like nginx (ignore_invalid_headers, underscores_in_headers off),
//   a name of anything but letters, digits and '-' is dropped; a header parameter the document
//   declares passes, unless its folded form is a header the gateway owns.
// - what a proxy in front says about the client (X-Real-IP, CF-Connecting-IP, ...): believed only
//   from a trusted proxy, like X-Forwarded-For (forward.ts).
import type { IncomingHttpHeaders } from "node:http";
import type { Operation } from "../openapi.ts";
import { HOP_BY_HOP, SPOOFABLE } from "./canonical-request.ts";

/** A header name with a character other than letters, digits and '-' (x_consumer, x.consumer). */
const NOT_PLAIN_HEADER_NAME = /[^A-Za-z0-9-]/;

/**
 * Headers by which a proxy in front tells the backend who the client is and how it connected,
 * besides X-Forwarded-For, -Proto and -Host (which the gateway writes itself) and Forwarded
 * (always dropped): the ones load balancers, CDNs and frameworks read. From a peer that is not a
 * trusted proxy they are the client's own claim, and removed.
 */
export const CLAIMED_BY_PROXIES: readonly string[] = [
  // The client's address.
  "x-real-ip", // nginx's realip module
  "true-client-ip", // Akamai, Cloudflare Enterprise
  "cf-connecting-ip", // Cloudflare
  "cf-connecting-ipv6",
  "cf-pseudo-ipv4",
  "x-client-ip",
  "x-cluster-client-ip", // Rackspace, Riverbed
  "fastly-client-ip", // Fastly
  "forwarded-for",
  "x-forwarded",
  "x-original-forwarded-for", // ingress-nginx
  "x-appengine-user-ip", // Google App Engine
  "x-envoy-external-address", // Envoy
  "x-azure-clientip", // Azure Front Door
  // How it connected: frameworks build links and redirects from these.
  "x-forwarded-port",
  "x-forwarded-server",
  "x-forwarded-prefix",
  "x-forwarded-scheme",
  "x-forwarded-protocol",
  "x-forwarded-ssl",
  "x-url-scheme",
  "front-end-https",
];

/**
 * The request headers the core sets, removes or judges for the backend; the policies add theirs
 * (PolicyInstance.requestHeaders). A declared header parameter that folds onto one of these
 * (X_Forwarded_For, x_consumer) is still dropped.
 */
export const CORE_REQUEST_HEADERS: readonly string[] = [
  ...HOP_BY_HOP,
  ...SPOOFABLE,
  ...CLAIMED_BY_PROXIES,
  "host",
  "content-length",
  "content-type",
  "accept-encoding",
  "x-request-id",
  "x-forwarded-for",
  "x-forwarded-proto",
  "x-forwarded-host",
  "traceparent",
  "tracestate",
];

const NONE: ReadonlySet<string> = new Set();

/**
 * The header names of the operation's declared parameters (lower case) that hold a character
 * other than letters, digits and '-', and may reach the backend: those whose folded form
 * ('_' and the like become '-') is no header in `owned`.
 */
export function keptUnusualHeaders(operation: Operation, owned: ReadonlySet<string>): ReadonlySet<string> {
  let kept: Set<string> | undefined;
  for (const parameter of operation.uncheckedParameters) {
    if (parameter.in !== "header" || !NOT_PLAIN_HEADER_NAME.test(parameter.name)) continue;
    const name = parameter.name.toLowerCase();
    if (owned.has(name.replace(/[^a-z0-9-]/g, "-"))) continue;
    kept ??= new Set();
    kept.add(name);
  }
  return kept ?? NONE;
}

/**
 * Drops every header whose name holds anything but letters, digits and '-', except those in
 * `kept`. One pass over the raw names; most requests have none, and pay only the test.
 */
export function dropUnusualHeaders(
  rawHeaders: readonly string[],
  headers: IncomingHttpHeaders,
  kept: ReadonlySet<string>,
): void {
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const raw = rawHeaders[index] as string;
    if (!NOT_PLAIN_HEADER_NAME.test(raw)) continue;
    const name = raw.toLowerCase();
    if (!kept.has(name) && headers[name] !== undefined) delete headers[name];
  }
}

/** Removes what only a trusted proxy may say about the client (see CLAIMED_BY_PROXIES). */
export function dropClaimsOfProxies(headers: IncomingHttpHeaders): void {
  // Most are absent: looking first spares a delete (see scrubRequestHeaders).
  for (const name of CLAIMED_BY_PROXIES) if (headers[name] !== undefined) delete headers[name];
}

// The request as the backend gets it: no hop-by-hop header, the X-Forwarded-* headers the
// deployment's trusted proxies allow (and what else a proxy says of the client, from those only),
// the gateway's request id, and a body of known length.
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type { Upstream } from "../proxy.ts";
import { type TrustedProxies, unmappedAddress } from "../trusted-proxies.ts";
import { dropHopByHop } from "./canonical-request.ts";
import type { Chain } from "./chains.ts";
import type { CoreExchange } from "./exchange.ts";
import { dropClaimsOfProxies } from "./request-headers.ts";

const FORWARDED_FOR = "x-forwarded-for";

export function forward(
  exchange: CoreExchange,
  chain: Chain,
  body: Buffer | undefined,
  upstream: Pick<Upstream, "forward">,
  isTrustedProxy: TrustedProxies,
): void {
  const headers = exchange.req.headers;
  dropHopByHop(headers);
  addForwardedHeaders(headers, exchange.req.socket.remoteAddress, isTrustedProxy);
  headers["x-request-id"] = exchange.requestId;
  // The gateway reads what it validates; compression is for the client side of the gateway.
  if (chain.readsResponseBody) headers["accept-encoding"] = "identity";
  if (body !== undefined) headers["content-length"] = String(body.length);
  upstream.forward(exchange, body);
}

/**
 * Behind a trusted proxy the chain goes on (the proxy's own X-Forwarded-Proto and -Host stay, and
 * its X-Real-IP & co.); from anyone else, what the client claimed is replaced by what the gateway
 * saw, or removed.
 */
function addForwardedHeaders(
  headers: IncomingHttpHeaders,
  remoteAddress: string | undefined,
  isTrustedProxy: TrustedProxies,
): void {
  const peer = unmappedAddress(remoteAddress ?? "");
  if (isTrustedProxy(peer)) {
    const prior = headers[FORWARDED_FOR];
    headers[FORWARDED_FOR] = prior ? `${prior}, ${peer}` : peer;
  } else {
    dropClaimsOfProxies(headers);
    headers[FORWARDED_FOR] = peer;
    headers["x-forwarded-proto"] = "http";
    headers["x-forwarded-host"] = headers.host ?? "";
  }
}

// Only hops added by proxies the deployment trusts are believed; the first untrusted one from the
// right is the client (anything left of it is what the client itself claimed).
export function clientAddressOf(req: IncomingMessage, isTrustedProxy: TrustedProxies): string {
  const peer = unmappedAddress(req.socket.remoteAddress ?? "");
  const forwarded = req.headers[FORWARDED_FOR];
  if (!isTrustedProxy(peer) || typeof forwarded !== "string") return peer;
  const hops = forwarded.split(",");
  for (let index = hops.length - 1; index >= 0; index--) {
    const hop = unmappedAddress((hops[index] as string).trim());
    if (hop !== "" && !isTrustedProxy(hop)) return hop;
  }
  return peer;
}

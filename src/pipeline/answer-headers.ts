// What every answer carries, whoever wrote it (the backend, a policy, the gateway itself): the
// headers policies set on the exchange, the request id, nosniff, the operation's reply phases,
// and Connection: close while the process drains.
import type { OutgoingHttpHeaders } from "node:http";
import { withNosniff } from "../replies.ts";
import { type Chain, runReply } from "./chains.ts";
import { markClosing } from "./connection-state.ts";
import type { CoreExchange } from "./exchange.ts";

/** What the core adds to every answer that a client may want to read (the nosniff header is for browsers themselves). */
export const CORE_RESPONSE_HEADERS: readonly string[] = ["x-request-id"];

export function finishHeaders(
  exchange: CoreExchange,
  chain: Chain | undefined,
  status: number,
  headers: OutgoingHttpHeaders,
  draining: boolean,
): void {
  for (const name in exchange.responseHeaders) {
    const value = exchange.responseHeaders[name];
    // Vary is a list: what the gateway varies on adds to what the backend varies on.
    headers[name] =
      name === "vary" && headers.vary !== undefined ? `${String(headers.vary)}, ${value}` : value;
  }
  headers["x-request-id"] = exchange.requestId;
  withNosniff(headers);
  if (chain) runReply(chain, exchange, status, headers);
  if (draining) headers.connection = "close";
  // Whatever this connection carries after this answer is not for the gateway to judge.
  if (headers.connection === "close" || !exchange.res.shouldKeepAlive) markClosing(exchange.req.socket);
}

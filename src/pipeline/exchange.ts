// One request's exchange, and how handlers shared by every request find it: it rides on the Node
// objects of its request (the request, the response, the backend's answer), so that no closure
// is made per request to remember it.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Exchange } from "../policy.ts";

const EXCHANGE = Symbol("exchange");
type Carrier = { [EXCHANGE]?: Exchange };

/** A new exchange, carried by its request and its response. */
export function newExchange(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  clientAddress: string,
): Exchange {
  const exchange: Exchange = {
    req,
    res,
    url: req.url ?? "",
    requestId,
    startedAt: performance.now(),
    clientAddress,
    operation: undefined,
    pathParams: {},
    query: new Map(),
    queryChanged: false,
    consumer: undefined,
    body: undefined,
    bodyJson: undefined,
    responseHeaders: {},
    notes: {},
    rejection: undefined,
    upstreamStartedAt: 0,
    upstreamEndedAt: 0,
    upstreamStatus: 0,
    finished: false,
  };
  (req as Carrier)[EXCHANGE] = exchange;
  (res as Carrier)[EXCHANGE] = exchange;
  return exchange;
}

/** The backend's answer carries its exchange too, for the handlers every streamed answer shares. */
export function carryExchange(response: IncomingMessage, exchange: Exchange): void {
  (response as Carrier)[EXCHANGE] = exchange;
}

export function exchangeOf(carrier: unknown): Exchange | undefined {
  return (carrier as Carrier)[EXCHANGE];
}

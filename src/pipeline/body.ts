// The request body, read whole before the body phases and the backend see it, and never more
// of it than the configured cap: counted on the wire, chunked bodies included.
import type { IncomingMessage } from "node:http";
import type { Chain } from "./chains.ts";
import type { CoreExchange } from "./exchange.ts";

const EXPECTS_CONTINUE = Symbol("expects 100-continue");
type MayExpectContinue = IncomingMessage & { [EXPECTS_CONTINUE]?: true };

/** The request sent Expect: 100-continue: readBody invites the body when it starts reading it. */
export function markExpectingContinue(req: IncomingMessage): void {
  (req as MayExpectContinue)[EXPECTS_CONTINUE] = true;
}

/**
 * Reads the body into exchange.body, then calls `whole`; or calls `tooLarge` as soon as the body
 * is known to be over `limit` bytes, and reads no more of it (the refusal closes the connection).
 */
export function readBody(
  exchange: CoreExchange,
  chain: Chain,
  limit: number,
  whole: (exchange: CoreExchange, chain: Chain) => void,
  tooLarge: (exchange: CoreExchange) => void,
): void {
  const { req } = exchange;
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > limit) return tooLarge(exchange);
  // Only now: an unauthenticated or refused client is never invited to upload its body.
  if ((req as MayExpectContinue)[EXPECTS_CONTINUE]) exchange.res.writeContinue();
  const chunks: Buffer[] = [];
  let size = 0;
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (size > limit) {
      req.off("data", onData);
      req.off("end", onEnd);
      return tooLarge(exchange);
    }
    chunks.push(chunk);
  };
  const onEnd = () => {
    if (exchange.finished) return;
    exchange.body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
    whole(exchange, chain);
  };
  // No framing, no body: the server ended it already (optimizeEmptyRequests), and no 'end' comes.
  if (req.readableEnded) return onEnd();
  req.on("data", onData);
  req.on("end", onEnd);
}

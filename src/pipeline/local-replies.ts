// Every answer the gateway writes itself, in one room: a refusal with the Error object, a
// policy's own answer (a CORS preflight), and the raw answers written straight to a socket when
// Node's parser refused the request before any handler saw it. A second copy of any of these is
// where a header or a count goes missing.
import type { OutgoingHttpHeaders } from "node:http";
import { errorBody, type GatewayError } from "../errors.ts";
import type { Operation } from "../openapi.ts";
import type { Exchange, LocalReply } from "../policy.ts";
import { finishHeaders } from "./answer-headers.ts";
import type { Chain } from "./chains.ts";

export interface LocalReplies {
  /**
   * Answers the exchange with the error, unless an answer is already under way; closeConnection
   * (or a request body left unread) closes the connection once it is written.
   */
  reject(exchange: Exchange, error: GatewayError, closeConnection?: boolean): void;
  /** A policy's own answer that is not an error: headers, no body. */
  answerLocally(exchange: Exchange, reply: LocalReply): void;
}

export function createLocalReplies(
  chains: ReadonlyMap<Operation, Chain>,
  abandonUpstream: (exchange: Exchange) => void,
  isDraining: () => boolean,
): LocalReplies {
  return {
    reject(exchange, error, closeConnection = false) {
      if (exchange.finished || exchange.res.headersSent) return;
      // A body refused before it was read (no key, wrong media type, no body allowed) is not
      // drained: Node would read it to its end on a kept-alive connection, for anyone, unauthenticated.
      const { headers: requestHeaders } = exchange.req;
      if (
        exchange.body === undefined &&
        (requestHeaders["transfer-encoding"] !== undefined ||
          (requestHeaders["content-length"] ?? "0") !== "0")
      ) {
        closeConnection = true;
      }
      exchange.rejection = error;
      abandonUpstream(exchange);
      const body = errorBody(error);
      const headers: OutgoingHttpHeaders = {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        "cache-control": "no-store",
      };
      if (error.headers) for (const name in error.headers) headers[name] = error.headers[name];
      // finishHeaders marks the connection closing, as for any answer that says so.
      if (closeConnection) headers.connection = "close";
      finishHeaders(
        exchange,
        exchange.operation === undefined ? undefined : chains.get(exchange.operation),
        error.status,
        headers,
        isDraining(),
      );
      const { res } = exchange;
      res.writeHead(error.status, headers);
      res.end(exchange.req.method === "HEAD" ? undefined : body);
      if (closeConnection) res.once("finish", () => exchange.req.socket.destroySoon());
    },

    answerLocally(exchange, reply) {
      if (exchange.finished || exchange.res.headersSent) return;
      exchange.notes.localReply = reply.reason;
      const headers: OutgoingHttpHeaders = { ...reply.headers, "content-length": 0 };
      finishHeaders(exchange, undefined, reply.status, headers, isDraining());
      exchange.res.writeHead(reply.status, headers);
      exchange.res.end();
    },
  };
}

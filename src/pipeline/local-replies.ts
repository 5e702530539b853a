// Every answer the public port writes itself, in one room: a refusal with the Error object, a
// policy's own answer (a CORS preflight), and the raw answers written straight to a socket when
// Node's parser refused the request before any handler saw it. A second copy of any of these is
// where a header or a count goes missing; their security headers and bytes are src/replies.ts's.
import { randomUUID } from "node:crypto";
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "pino";
import { type ErrorCode, errorBody, type GatewayError, gatewayError } from "../errors.ts";
import { type Metrics, statusLabel, UNMATCHED } from "../metrics.ts";
import { pendingResponse } from "../node-internals.ts";
import type { Operation } from "../openapi.ts";
import type { LocalReply } from "../policy.ts";
import { ownAnswerHeaders, rawAnswer } from "../replies.ts";
import { finishHeaders } from "./answer-headers.ts";
import type { Chain } from "./chains.ts";
import { isClosing, markClosing } from "./connection-state.ts";
import type { CoreExchange } from "./exchange.ts";

export interface LocalReplies {
  /**
   * Answers the exchange with the error, unless an answer is already under way; closeConnection
   * (or a request body left unread) closes the connection once it is written.
   */
  refuse(exchange: CoreExchange, error: GatewayError, closeConnection?: boolean): void;
  /** A policy's own answer that is not an error: headers, no body. */
  answerLocally(exchange: CoreExchange, reply: LocalReply): void;
}

/**
 * How an answer the gateway composed goes out: written to the client as it is (proxy mode), or
 * carried by a proxy in front that can pass only some answers on (decision mode: src/decision/).
 * body is undefined for a HEAD request and for answers without one.
 */
export type AnswerWriter = (
  exchange: CoreExchange,
  status: number,
  headers: OutgoingHttpHeaders,
  body: string | undefined,
) => void;

const WRITE_TO_CLIENT: AnswerWriter = (exchange, status, headers, body) => {
  exchange.res.writeHead(status, headers);
  exchange.res.end(body);
};

export function createLocalReplies(
  chains: ReadonlyMap<Operation, Chain>,
  abandonUpstream: (exchange: CoreExchange) => void,
  isDraining: () => boolean,
  write: AnswerWriter = WRITE_TO_CLIENT,
): LocalReplies {
  return {
    refuse(exchange, error, closeConnection = false) {
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
      // A message may quote the client's own text (a parameter's name), and with it a key.
      const body = errorBody(error, exchange.redact(error.message));
      const headers = ownAnswerHeaders({
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
      });
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
      write(exchange, error.status, headers, exchange.req.method === "HEAD" ? undefined : body);
      if (closeConnection) exchange.res.once("finish", () => exchange.req.socket.destroySoon());
    },

    answerLocally(exchange, reply) {
      if (exchange.finished || exchange.res.headersSent) return;
      exchange.facts.localReply = reply.reason;
      const headers: OutgoingHttpHeaders = { ...reply.headers, "content-length": 0 };
      finishHeaders(exchange, undefined, reply.status, headers, isDraining());
      write(exchange, reply.status, headers, undefined);
    },
  };
}

// --- Raw answers: written to the socket, for requests Node's parser refused ------------------------

/** What a raw answer on the public port needs of the gateway: its metrics and log, and its refusal of a request under way. */
export interface RawAnswerSink {
  readonly metrics: Metrics;
  readonly logger: Logger;
  refuseResponse(res: ServerResponse, code: ErrorCode): boolean;
}

/** A CONNECT, refused with the Error object: the gateway is not a tunnel. */
export function answerConnect(socket: Socket, gateway: RawAnswerSink): void {
  const reply = gatewayError("BAD_REQUEST", "CONNECT is not served");
  observeRawRefusal(gateway, reply, { method: "CONNECT" });
  socket.on("error", () => socket.destroy());
  writeRawAnswer(socket, reply);
}

const CLIENT_ERRORS: Readonly<Record<string, ErrorCode>> = {
  HPE_HEADER_OVERFLOW: "HEADERS_TOO_LARGE",
  ERR_HTTP_REQUEST_TIMEOUT: "REQUEST_TIMEOUT",
  ERR_HTTP_HEADERS_TIMEOUT: "REQUEST_TIMEOUT",
};

/**
 * The catalogue's code for what Node's parser refused or timed out, on either port; undefined
 * when the client left (a reset, a broken pipe, the connection closed mid-request). llhttp knows
 * a fixed list of methods: any other token is a method not implemented (RFC 9110 §9.1: 501).
 */
function clientErrorCode(error: NodeJS.ErrnoException & { rawPacket?: Buffer }): ErrorCode | undefined {
  const parserError = error.code ?? "";
  if (parserError === "HPE_INVALID_EOF_STATE") return undefined;
  if (parserError === "HPE_INVALID_METHOD" && startsWithMethodToken(error.rawPacket))
    return "NOT_IMPLEMENTED";
  return CLIENT_ERRORS[parserError] ?? (parserError.startsWith("HPE_") ? "BAD_REQUEST" : undefined);
}

// What Node's parser refuses, and the headers or request timeouts it enforces, never reach the
// handler: answer them with the Error object too, unless an answer is already on the wire.
export function answerClientError(
  error: NodeJS.ErrnoException & { rawPacket?: Buffer },
  socket: Socket,
  gateway: RawAnswerSink,
): void {
  const code = clientErrorCode(error);
  if (code === undefined) {
    // A reset, a broken pipe or the connection closed mid-request is the client leaving, not a
    // request the gateway refused: a request it was sending is logged once, as 499, on close.
    socket.destroy();
    return;
  }
  // An unknown method deserves the same id, line and count as any answer.
  if (code === "NOT_IMPLEMENTED") {
    const reply = gatewayError(code);
    const requestId = randomUUID();
    gateway.metrics.observeRequest(UNMATCHED, OTHER_METHOD, statusLabel(reply.status), 0);
    observeRawRefusal(gateway, reply, { reqId: requestId, method: OTHER_METHOD });
    if (!socket.writable || isClosing(socket)) return void socket.destroy();
    return writeRawAnswer(socket, reply, requestId);
  }
  const reply = gatewayError(code);
  const timeout = code === "REQUEST_TIMEOUT";
  const pending = pendingResponse(socket);
  // The request being answered is still arriving (a broken chunk, a body too slow): it is the one
  // refused, through the pipeline, which logs and counts it like any other refusal.
  if (pending && !isClosing(socket) && (timeout || pending.req?.complete === false)) {
    if (gateway.refuseResponse(pending, code)) return;
  }
  // With no request line there is no operation or method.
  observeRawRefusal(gateway, reply, { parserError: error.code ?? "" });
  if (isClosing(socket)) {
    // An answer that closes the connection went first; let it flush, write nothing after it.
    socket.destroySoon();
    return;
  }
  // An earlier request's answer is still to come: nothing may be written before it.
  if (!socket.writable || pending) {
    socket.destroy();
    return;
  }
  writeRawAnswer(socket, reply);
}

// The ops port counts and logs no requests: a refusal there is only answered, as the public
// port answers it.
export function answerOpsClientError(
  error: NodeJS.ErrnoException & { rawPacket?: Buffer },
  socket: Socket,
): void {
  const code = clientErrorCode(error);
  const pending = pendingResponse(socket);
  // The client leaving, or an answer still to come that nothing may be written before.
  if (code === undefined || pending || !socket.writable) {
    socket.destroy();
    return;
  }
  socket.on("error", () => socket.destroy());
  writeRawAnswer(socket, gatewayError(code));
}

/** A refusal the pipeline never saw, counted and logged like any refusal. */
function observeRawRefusal(
  gateway: RawAnswerSink,
  reply: GatewayError,
  fields: Record<string, string>,
): void {
  gateway.metrics.observeRejection(UNMATCHED, reply.reason, reply.code);
  gateway.logger.info(
    { operation: UNMATCHED, ...fields, status: reply.status, code: reply.code, reason: reply.reason },
    "request",
  );
}

/** The method label of a token the parser refused: never the client's text (unbounded label values). */
const OTHER_METHOD = "_OTHER";
/** Longer than any registered method: a longer run is not read as one. */
const MAX_METHOD_LENGTH = 32;
const SPACE = 0x20;

/** Whether the bytes start with an RFC 9110 token and a space, as a request line's method does. */
export function startsWithMethodToken(bytes: Buffer | undefined): boolean {
  if (bytes === undefined) return false;
  const end = Math.min(bytes.length, MAX_METHOD_LENGTH + 1);
  for (let index = 0; index < end; index++) {
    const byte = bytes[index] as number;
    if (byte === SPACE) return index > 0;
    if (!isTokenChar(byte)) return false;
  }
  return false;
}

// tchar: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
function isTokenChar(byte: number): boolean {
  if ((byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a))
    return true;
  return "!#$%&'*+-.^_`|~".includes(String.fromCharCode(byte));
}

export function writeRawAnswer(socket: Socket, reply: GatewayError, requestId?: string): void {
  markClosing(socket);
  socket.end(rawAnswer(reply, requestId));
  socket.destroySoon();
}

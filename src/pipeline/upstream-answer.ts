// The backend's answer on its way to the client: checked by the operation's response phases,
// either whole (a JSON answer a policy reads is held up to the cap, decoded, then judged) or at
// its head (streamed), then written with the headers the gateway owns. Faults on the way (an
// invalid status, a reset, the deadline) become the gateway's own answer while nothing has been
// sent, and a cut answer once something has.
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import { gatewayError, upstreamTimeoutError } from "../errors.ts";
import { JSON_FAMILY_MEDIA_TYPE } from "../media-types.ts";
import type { Operation } from "../openapi.ts";
import type { UpstreamAnswer } from "../policy.ts";
import { type BodySink, type UpstreamFault, type UpstreamResponse, upstreamDone } from "../proxy.ts";
import type { AnswerBudget } from "./answer-budget.ts";
import { finishHeaders } from "./answer-headers.ts";
import type { BasePathHint } from "./base-path-hint.ts";
import { freeBufferMemory } from "./buffer-memory.ts";
import { connectionListed, isHopByHop } from "./canonical-request.ts";
import { type Chain, runResponse } from "./chains.ts";
import type { CoreExchange } from "./exchange.ts";
import { HeldBody } from "./held-body.ts";
import type { LocalReplies } from "./local-replies.ts";

export interface UpstreamAnswers {
  onResponse(exchange: CoreExchange, response: UpstreamResponse): void;
  onFault(exchange: CoreExchange, fault: UpstreamFault, detail: string): void;
}

export interface UpstreamAnswerOptions {
  readonly chains: ReadonlyMap<Operation, Chain>;
  readonly refuse: LocalReplies["refuse"];
  /** Room for answers held whole; one that does not fit is treated as one over the cap. */
  readonly budget: AnswerBudget;
  /** The most of an answer held to be judged whole, before and after decoding. */
  readonly maxBodyBytes: number;
  /** The backend's deadline, for the message of a 504. */
  readonly timeoutMs: number;
  readonly isDraining: () => boolean;
  readonly basePathHint: BasePathHint;
}

const CUT_MID_ANSWER = "The backend closed the connection in the middle of its answer";

export function createUpstreamAnswers(options: UpstreamAnswerOptions): UpstreamAnswers {
  const { chains, refuse, budget, maxBodyBytes, timeoutMs, isDraining, basePathHint } = options;

  function onResponse(exchange: CoreExchange, response: UpstreamResponse): void {
    exchange.upstreamStatus = response.statusCode;
    const chain = chains.get(exchange.operation as Operation) as Chain;
    const status = exchange.upstreamStatus;
    if (status < 200 || status > 599) {
      // Not a final HTTP status: nothing a client could rely on.
      response.destroy();
      exchange.facts.upstreamFault = `status ${status}`;
      return refuse(
        exchange,
        gatewayError("UPSTREAM_UNAVAILABLE", "The backend answered with an invalid status"),
      );
    }
    const bodyless = exchange.req.method === "HEAD" || status === 204 || status === 304;
    // Such an answer is whole at its head: bytes a sloppy backend sends after it (a body for a
    // HEAD, a 204 with a Content-Length) break its socket, not the answer the client is owed.
    if (bodyless) upstreamDone(exchange);
    if (
      exchange.holdsAnswer &&
      !bodyless &&
      JSON_FAMILY_MEDIA_TYPE.test(response.headers["content-type"] ?? "")
    ) {
      response.sink = new HeldAnswer(exchange, chain, response);
      return;
    }
    basePathHint.notice(exchange.operation as Operation, status, response.headers, undefined);
    const error = runResponse(chain, exchange, {
      status,
      headers: response.headers,
      body: undefined,
      oversized: false,
      fault: undefined,
    });
    if (error) {
      response.destroy();
      return refuse(exchange, error);
    }
    writeUpstreamHead(exchange, chain, response, false, undefined);
    response.sink = new StreamedAnswer(exchange, response);
  }

  /**
   * An answer on its way to the client as it comes. The deadline covers it to its end: a backend
   * that stalls mid-body (or a client that reads slowly and holds a backend socket) is cut off
   * like one that never answers. Each chunk is freed once written (writeAndFree).
   */
  class StreamedAnswer implements BodySink {
    private readonly exchange: CoreExchange;
    private readonly response: UpstreamResponse;

    constructor(exchange: CoreExchange, response: UpstreamResponse) {
      this.exchange = exchange;
      this.response = response;
      exchange.res.on("drain", () => response.resume());
    }

    data(chunk: Buffer): void {
      if (!writeAndFree(this.exchange.res, chunk)) this.response.pause();
    }

    end(): void {
      upstreamDone(this.exchange);
      this.exchange.res.end();
    }

    error(): void {
      // The answer is already on its way: cut the connection so the client sees it incomplete.
      this.exchange.facts.upstreamFault ??= "reset mid-body";
      this.exchange.res.destroy();
    }
  }

  /** An answer held until it is whole (or over the cap), then judged by the response phases. */
  class HeldAnswer implements BodySink {
    private readonly exchange: CoreExchange;
    private readonly chain: Chain;
    private readonly response: UpstreamResponse;
    private readonly chunks: Buffer[] = [];
    private size = 0;

    constructor(exchange: CoreExchange, chain: Chain, response: UpstreamResponse) {
      this.exchange = exchange;
      this.chain = chain;
      this.response = response;
    }

    data(chunk: Buffer): void {
      const { exchange, chunks, response } = this;
      this.size += chunk.length;
      chunks.push(chunk);
      if (this.size <= maxBodyBytes && budget.take(exchange, chunk.length)) return;
      const error = runResponse(this.chain, exchange, {
        status: exchange.upstreamStatus,
        headers: response.headers,
        body: undefined,
        oversized: true,
        fault: undefined,
      });
      if (error) {
        response.destroy();
        new HeldBody(chunks, this.size).free();
        return refuse(exchange, error);
      }
      // Allowed through (e.g. report mode): what was read goes first, the rest streams.
      writeUpstreamHead(exchange, this.chain, response, false, undefined);
      let flowing = true;
      for (const buffered of chunks) flowing = writeAndFree(exchange.res, buffered);
      chunks.length = 0;
      response.sink = new StreamedAnswer(exchange, response);
      if (!flowing) response.pause();
    }

    end(): void {
      const { exchange, response } = this;
      upstreamDone(exchange);
      const held = new HeldBody(this.chunks, this.size);
      if (exchange.finished) return held.free();
      const { sent, judged, oversized, fault } = decoded(
        held,
        response.headers["content-encoding"],
        maxBodyBytes,
      );
      basePathHint.notice(exchange.operation as Operation, exchange.upstreamStatus, response.headers, judged);
      const answer: UpstreamAnswer = {
        status: exchange.upstreamStatus,
        headers: response.headers,
        body: judged,
        oversized,
        fault,
      };
      const error = runResponse(this.chain, exchange, answer);
      if (error) {
        sent.free();
        return refuse(exchange, error);
      }
      writeUpstreamHead(exchange, this.chain, response, judged !== undefined, sent.length);
      // Freed by the budget once the response has finished (answer-budget.ts).
      exchange.heldAnswer = sent;
      sent.endResponse(exchange.res);
    }

    error(): void {
      const { exchange } = this;
      if (exchange.finished) return;
      upstreamDone(exchange);
      refuse(exchange, gatewayError("UPSTREAM_UNAVAILABLE", CUT_MID_ANSWER));
    }
  }

  function writeUpstreamHead(
    exchange: CoreExchange,
    chain: Chain,
    response: UpstreamResponse,
    decodedBody: boolean,
    length: number | undefined,
  ): void {
    const headers = endToEnd(response.headers);
    if (decodedBody && headers["content-encoding"] !== undefined) delete headers["content-encoding"];
    if (length !== undefined) headers["content-length"] = length;
    finishHeaders(exchange, chain, exchange.upstreamStatus, headers, isDraining());
    exchange.res.writeHead(exchange.upstreamStatus, headers);
  }

  function onFault(exchange: CoreExchange, fault: UpstreamFault, detail: string): void {
    exchange.facts.upstreamFault = detail;
    if (exchange.res.headersSent) {
      // Mid-body: the client must see a broken answer, never a complete-looking short one.
      exchange.res.destroy();
      return;
    }
    refuse(
      exchange,
      fault === "timeout" ? upstreamTimeoutError(timeoutMs) : gatewayError("UPSTREAM_UNAVAILABLE"),
    );
  }

  return { onResponse, onFault };
}

/**
 * Writes a chunk of the backend's answer, which the gateway alone holds, and frees its memory
 * once written (buffer-memory.ts): a streamed answer makes few JavaScript objects, so V8 collects
 * seldom, and its chunks stayed allocated long after the kernel had them (50 MB of them while
 * 51 answers streamed to clients that did not read, against 10 MB in the streams' buffers).
 */
function writeAndFree(res: ServerResponse, chunk: Buffer): boolean {
  return res.write(chunk, (error) => {
    if (!error) freeBufferMemory(chunk);
  });
}

/**
 * The backend's headers minus the hop-by-hop ones, copied in one pass instead of copy-then-delete.
 * CORS is the gateway's to answer, on or off: a backend that reflects any origin with credentials
 * would otherwise open to every site what the gateway's CORS policy opens to a few.
 */
export function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const listed = connectionListed(headers.connection);
  const copy: OutgoingHttpHeaders = {};
  for (const name in headers) {
    if (isHopByHop(name) || (listed.length > 0 && listed.includes(name))) continue;
    if (name.startsWith(ACCESS_CONTROL)) continue;
    copy[name] = headers[name];
  }
  return copy;
}
const ACCESS_CONTROL = "access-control-";

/**
 * What the response phases judge and what the client gets: the held body as it came when it has
 * no content coding; else decoded (then both are the decoded body), or, when it cannot be decoded
 * within `limit`, sent as it came and judged as nothing.
 */
function decoded(
  held: HeldBody,
  encoding: string | undefined,
  limit: number,
): { sent: HeldBody; judged: HeldBody | undefined; oversized: boolean; fault: string | undefined } {
  if (isIdentity(encoding)) return { sent: held, judged: held, oversized: false, fault: undefined };
  const raw = held.join();
  const { body, oversized, fault } = decode(raw, encoding, limit);
  if (body === undefined)
    return { sent: new HeldBody([raw], raw.length), judged: undefined, oversized, fault };
  freeBufferMemory(raw);
  const plain = new HeldBody([body], body.length);
  return { sent: plain, judged: plain, oversized, fault };
}

// Content codings are case-insensitive tokens (RFC 9110 §8.4.1): `Identity` is no coding at all.
function isIdentity(encoding: string | undefined): boolean {
  const value = encoding?.trim().toLowerCase();
  return value === undefined || value === "" || value === "identity";
}

/**
 * The body as the response phases judge it: decoded when compressed, never past `limit` bytes
 * once decoded (oversized), and with a fault when it cannot be decoded. Undecoded, it is passed
 * on as it came.
 */
export function decode(
  raw: Buffer,
  encoding: string | undefined,
  limit: number,
): { body: Buffer | undefined; oversized: boolean; fault: string | undefined } {
  if (encoding === undefined || isIdentity(encoding))
    return { body: raw, oversized: false, fault: undefined };
  try {
    const options = { maxOutputLength: limit };
    const value = encoding.toLowerCase().trim();
    if (value === "gzip" || value === "x-gzip")
      return { body: gunzipSync(raw, options), oversized: false, fault: undefined };
    if (value === "deflate") return { body: inflateSync(raw, options), oversized: false, fault: undefined };
    if (value === "br")
      return { body: brotliDecompressSync(raw, options), oversized: false, fault: undefined };
    return { body: undefined, oversized: false, fault: `unsupported content-encoding ${value}` };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ERR_BUFFER_TOO_LARGE") return { body: undefined, oversized: true, fault: undefined };
    return { body: undefined, oversized: false, fault: `undecodable ${encoding} body` };
  }
}

// One request's exchange, and how handlers shared by every request find it: it rides on the Node
// objects of its request (the request and the response), so that no closure is made per request
// to remember it.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { DocumentVersion } from "../document-version.ts";
import type { GatewayError } from "../errors.ts";
import type { Operation } from "../openapi.ts";
import type { Exchange } from "../policy.ts";
import { credentialsOf, type KeyRecognizer, redactKeys } from "../redaction.ts";
import type { ExchangeSpans } from "../tracing/index.ts";
import type { HeldBody } from "./held-body.ts";

/** The exchange as the core holds it: the policies' view plus the core's own bookkeeping. */
export interface CoreExchange extends Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /**
   * The core's own facts for the access line (upstreamFault, aborted, localReply, …), written
   * beside its fields; the policies' notes go under `notes`.
   */
  readonly facts: Record<string, string | number | boolean>;
  operation: Operation | undefined;
  pathParams: Record<string, string>;
  readonly query: Map<string, string>;
  /** Set when a policy changed the query: the core then serialises it for the backend. */
  queryChanged: boolean;
  consumer: string | undefined;
  traceId: string | undefined;
  spanId: string | undefined;
  /** The request's spans, when the gateway exports traces (src/tracing/). */
  spans: ExchangeSpans | undefined;
  body: Buffer | undefined;
  rejection: GatewayError | undefined;
  upstreamStartedAt: number;
  upstreamEndedAt: number;
  upstreamStatus: number;
  /**
   * The status of an answer the gateway composed but a proxy in front delivers in another form
   * (decision mode's nginx door sends every refusal as 403): what metrics and the log count. 0: none.
   */
  carriedStatus: number;
  finished: boolean;
  /** The backend's answer is held to be judged whole when it is JSON (decided when it is forwarded). */
  holdsAnswer: boolean;
  /** Bytes of the answer held to be judged whole, and the cap reserved until it arrives (answer-budget.ts). */
  heldAnswerBytes: number;
  reservedAnswerBytes: number;
  /** The held answer as written to the client, until its memory is freed (answer-budget.ts). */
  heldAnswer: HeldBody | undefined;
  /** The document's version the request arrived under, which judges it to the end (document-version.ts). */
  version: DocumentVersion | undefined;
}

const EXCHANGE = Symbol("exchange");
type Carrier = { [EXCHANGE]?: CoreExchange };

// A class, so that the setters live once on its prototype rather than as closures per request.
class RequestExchange implements CoreExchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly requestId: string;
  readonly clientAddress: string;
  readonly url: string;
  readonly startedAt = performance.now();
  operation: Operation | undefined = undefined;
  pathParams: Record<string, string> = {};
  readonly query = new Map<string, string>();
  queryChanged = false;
  consumer: string | undefined = undefined;
  traceId: string | undefined = undefined;
  spanId: string | undefined = undefined;
  spans: ExchangeSpans | undefined = undefined;
  body: Buffer | undefined = undefined;
  readonly responseHeaders: Record<string, string> = {};
  readonly notes: Record<string, string | number | boolean> = {};
  readonly facts: Record<string, string | number | boolean> = {};
  rejection: GatewayError | undefined = undefined;
  upstreamStartedAt = 0;
  upstreamEndedAt = 0;
  upstreamStatus = 0;
  carriedStatus = 0;
  finished = false;
  holdsAnswer = false;
  heldAnswerBytes = 0;
  reservedAnswerBytes = 0;
  heldAnswer: HeldBody | undefined = undefined;
  version: DocumentVersion | undefined = undefined;
  /** The client's Authorization as it arrived: a policy may replace or remove it for the backend. */
  private readonly clientAuthorization: string | undefined;
  private readonly isKey: KeyRecognizer;

  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    requestId: string,
    clientAddress: string,
    isKey: KeyRecognizer,
  ) {
    this.req = req;
    this.res = res;
    this.requestId = requestId;
    this.clientAddress = clientAddress;
    this.url = req.url ?? "";
    this.clientAuthorization = req.headers.authorization;
    this.isKey = isKey;
  }

  redact(text: string): string {
    // The client's credential, and the one the backend got in its place (an upstream credential).
    const credentials = credentialsOf(this.clientAuthorization);
    const forwarded = this.req.headers.authorization;
    if (forwarded !== this.clientAuthorization) credentials.push(...credentialsOf(forwarded));
    return redactKeys(text, credentials, this.isKey);
  }

  get method(): string {
    return this.req.method ?? "";
  }

  get headers(): IncomingHttpHeaders {
    return this.req.headers;
  }

  // The core forwards the request's own header object: what a policy sets there is what the
  // backend gets.
  setUpstreamHeader(name: string, value: string | undefined): void {
    if (value === undefined) delete this.req.headers[name];
    else this.req.headers[name] = value;
  }

  setQueryParameter(name: string, value: string): void {
    this.query.set(name, value);
    this.queryChanged = true;
  }

  identify(consumer: string): void {
    this.consumer = consumer;
  }
}

const KNOWS_NO_KEY: KeyRecognizer = () => false;

/**
 * A new exchange, carried by its request and its response. isKey: whether a run of key
 * characters is a key some policy knows (for redact()).
 */
export function newExchange(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  clientAddress: string,
  isKey: KeyRecognizer = KNOWS_NO_KEY,
): CoreExchange {
  const exchange = new RequestExchange(req, res, requestId, clientAddress, isKey);
  (req as Carrier)[EXCHANGE] = exchange;
  (res as Carrier)[EXCHANGE] = exchange;
  return exchange;
}

export function exchangeOf(carrier: unknown): CoreExchange | undefined {
  return (carrier as Carrier)[EXCHANGE];
}

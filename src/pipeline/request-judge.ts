// The request side of the gateway, one engine behind every front door: proxy mode judges the
// request it will forward, decision mode (src/decision/) judges the request a proxy in front asks
// about. Canonical request -> arrival phases -> query -> route -> request phases, then the body
// phases: what either door refuses, answers or admits is decided here and nowhere else, so that
// the two modes cannot drift apart. Writing the answer, forwarding and observing are the door's.
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type GatewayError, gatewayError } from "../errors.ts";
import type { ApiDescription, Operation } from "../openapi.ts";
import type { LocalReply } from "../policy.ts";
import { canonicalTarget, parseQuery, scrubRequestHeaders, serializeQuery } from "./canonical-request.ts";
import {
  buildArrival,
  buildChains,
  type Chain,
  isCredential,
  type NamedPolicy,
  type PolicyFailure,
  runArrival,
  runRequest,
  runRequestBody,
} from "./chains.ts";
import { type CoreExchange, newExchange } from "./exchange.ts";
import { dropUnusualHeaders } from "./request-headers.ts";
import { clientRequestId, isCredentialAsId } from "./request-id.ts";
import { judgeTraceContext } from "./trace-headers.ts";

/** What the request side decided of a request's head (its body, if any, is still unread). */
export type HeadVerdict =
  | { readonly kind: "refuse"; readonly error: GatewayError; readonly closeConnection: boolean }
  /** A policy's own answer (a CORS preflight). */
  | { readonly kind: "answer"; readonly reply: LocalReply }
  | {
      readonly kind: "admit";
      readonly operation: Operation;
      readonly chain: Chain;
      /**
       * The target the backend gets, after its own base path: the public base path removed, the
       * query as the gateway holds it when a policy changed it (a clamped limit), else as sent.
       */
      readonly upstreamTarget: string;
    };

export interface RequestJudge {
  readonly chains: ReadonlyMap<Operation, Chain>;
  /** A new exchange for the request, with its request id (the client's, unless it is a credential). */
  open(req: IncomingMessage, res: ServerResponse, clientAddress: string): CoreExchange;
  head(exchange: CoreExchange): HeadVerdict;
  /** The body phases, once exchange.body holds the whole body. */
  body(exchange: CoreExchange, chain: Chain): GatewayError | undefined;
}

export interface RequestJudgeOptions {
  readonly api: ApiDescription;
  readonly policies: readonly NamedPolicy[];
  /** Told of a policy's phase that throws: it fails its request, not the process (policy-failure.ts). */
  readonly failed: PolicyFailure;
}

export function createRequestJudge(options: RequestJudgeOptions): RequestJudge {
  const { api, failed } = options;
  const { router } = api;
  const chains = buildChains(api.operations, options.policies, failed);
  const arrival = buildArrival(options.policies, failed);
  const recognizesCredential = (value: string) => isCredential(arrival, value);
  const basePathLength = api.basePath.length;

  return {
    chains,
    open(req, res, clientAddress) {
      const clientId = clientRequestId(req.headers);
      const credentialAsId =
        clientId !== undefined && isCredentialAsId(clientId, req.headers.authorization, recognizesCredential);
      const exchange = newExchange(
        req,
        res,
        clientId !== undefined && !credentialAsId ? clientId : randomUUID(),
        clientAddress,
        recognizesCredential,
      );
      // Replacing a known key tells the client it is one: the operator sees that somebody tried.
      if (credentialAsId) exchange.facts.requestIdReplaced = "credential";
      judgeTraceContext(exchange, recognizesCredential);
      return exchange;
    },

    head(exchange) {
      const { req } = exchange;
      const target = canonicalTarget(req);
      if (target.refusal !== undefined) {
        return { kind: "refuse", error: target.refusal, closeConnection: target.closeConnection };
      }
      const { path, rawQuery } = target;
      scrubRequestHeaders(req.headers);
      const reply = runArrival(arrival, exchange);
      if (reply) return "code" in reply ? refuse(reply) : { kind: "answer", reply };
      const badQuery = parseQuery(rawQuery, exchange.query);
      if (badQuery !== undefined) return refuse(badQuery);
      const match = router.match(req.method ?? "", path);
      if (match.kind === "not-found") return refuse(gatewayError("NOT_FOUND"));
      if (match.kind === "method-not-allowed") {
        return refuse(gatewayError("METHOD_NOT_ALLOWED", undefined, { allow: match.allow }));
      }
      exchange.operation = match.operation;
      exchange.pathParams = match.pathParams;
      const chain = chains.get(match.operation) as Chain;
      // Before any policy reads them: what a backend could fold onto a header the gateway sets.
      dropUnusualHeaders(req.rawHeaders, req.headers, chain.unusualHeaders);
      const refusal = runRequest(chain, exchange);
      if (refusal) return refuse(refusal);
      // The backend's own base path replaces the public one (the door prepends it).
      const upstreamTarget = exchange.queryChanged
        ? `${path.slice(basePathLength)}?${serializeQuery(exchange.query)}`
        : exchange.url.slice(basePathLength);
      return { kind: "admit", operation: match.operation, chain, upstreamTarget };
    },

    body(exchange, chain) {
      return runRequestBody(chain, exchange);
    },
  };
}

function refuse(error: GatewayError): HeadVerdict {
  return { kind: "refuse", error, closeConnection: false };
}

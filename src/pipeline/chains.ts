// Each operation's phases, built once at start-up: the policies' phases in their fixed order on
// the way in, in reverse on the way out, as layers unwinding; and the runners that call them, so
// that a policy that throws fails the request it was judging, not the process. Uncaught, one request
// reaching a bug in one policy would end every request in flight on the process and, sent again,
// keep it restarting. A judging phase that throws refuses the request with 500 INTERNAL_ERROR, an
// answer phase leaves the answer as it was, and the failure is reported for the log. The core's
// own code is not wrapped: a throw there still ends the process (serve.ts), since the state of the
// exchange is then unknown.
import type { OutgoingHttpHeaders } from "node:http";
import { type GatewayError, gatewayError } from "../errors.ts";
import type { Operation } from "../openapi.ts";
import type { LocalReply, PolicyInstance, UpstreamAnswer } from "../policy.ts";
import type { CoreExchange } from "./exchange.ts";
import { CORE_REQUEST_HEADERS, keptUnusualHeaders } from "./request-headers.ts";

/** A policy instance and the name it is configured under (`policies.<name>`). */
export interface NamedPolicy {
  readonly name: string;
  readonly instance: PolicyInstance;
}

/** Told of every failure: which policy, which phase, the request (when there is one) and what was thrown. */
export type PolicyFailure = (
  policy: string,
  phase: PhaseName,
  exchange: CoreExchange | undefined,
  error: unknown,
) => void;

export type PhaseName =
  | "onArrival"
  | "recognizesCredential"
  | "onRequest"
  | "onRequestBody"
  | "onResponse"
  | "readsResponseBody"
  | "onReply";

type JudgingPhase = (exchange: CoreExchange) => GatewayError | undefined;
type AnswerPhase = (exchange: CoreExchange, answer: UpstreamAnswer) => GatewayError | undefined;
type ReplyPhase = (exchange: CoreExchange, status: number, headers: OutgoingHttpHeaders) => void;
type ArrivalPhase = (exchange: CoreExchange) => GatewayError | LocalReply | undefined;

/** A policy's phase bound to its instance once, at start-up, with the name it is logged under. */
export interface Step<Phase> {
  readonly policy: string;
  readonly run: Phase;
}

/** One operation's phases, in the order they run; the runners below call them. */
export interface Chain {
  readonly request: readonly Step<JudgingPhase>[];
  readonly requestBody: readonly Step<JudgingPhase>[];
  readonly response: readonly Step<AnswerPhase>[];
  readonly reply: readonly Step<ReplyPhase>[];
  /** Some response phase may read the body: JSON answers are then buffered up to the cap. */
  readonly readsResponseBody: boolean;
  /**
   * Whether this request's answer is held, decided once before it is forwarded, when a phase
   * reads only some answers; unset, every answer is held when readsResponseBody says so.
   */
  readonly holdsAnswer?: (exchange: CoreExchange) => boolean;
  /** The operation's declared header parameters whose unusual names may pass (request-headers.ts). */
  readonly unusualHeaders: ReadonlySet<string>;
  readonly failed: PolicyFailure;
}

/** What runs before routing, for every request, and the credential question asked of a client's request id. */
export interface ArrivalPhases {
  readonly arrival: readonly Step<ArrivalPhase>[];
  readonly credentialCheckers: readonly Step<(value: string) => boolean>[];
  readonly failed: PolicyFailure;
}

const POLICY_FAILED: GatewayError = gatewayError("INTERNAL_ERROR");

export function buildChains(
  operations: readonly Operation[],
  policies: readonly NamedPolicy[],
  failed: PolicyFailure,
): ReadonlyMap<Operation, Chain> {
  const chains = new Map<Operation, Chain>();
  const owned = new Set([
    ...CORE_REQUEST_HEADERS,
    ...policies.flatMap(({ instance }) => instance.requestHeaders ?? []),
  ]);
  for (const operation of operations) {
    const request: Step<JudgingPhase>[] = [];
    const requestBody: Step<JudgingPhase>[] = [];
    const response: Step<AnswerPhase>[] = [];
    const reply: Step<ReplyPhase>[] = [];
    let readsResponseBody = false;
    let readsAlways = false;
    const samplers: Step<(exchange: CoreExchange) => boolean>[] = [];
    for (const { name: policy, instance } of policies) {
      const phases = instance.forOperation(operation);
      if (!phases) continue;
      if (phases.onRequest) request.push({ policy, run: phases.onRequest.bind(phases) });
      if (phases.onRequestBody) requestBody.push({ policy, run: phases.onRequestBody.bind(phases) });
      if (phases.onResponse) response.push({ policy, run: phases.onResponse.bind(phases) });
      if (phases.onReply) reply.push({ policy, run: phases.onReply.bind(phases) });
      if (phases.onResponse === undefined) continue;
      const reads = phases.readsResponseBody;
      if (reads === true) readsAlways = true;
      else if (typeof reads === "function") samplers.push({ policy, run: reads.bind(phases) });
      readsResponseBody ||= reads === true || typeof reads === "function";
    }
    chains.set(operation, {
      request,
      requestBody,
      response: response.reverse(),
      reply: reply.reverse(),
      readsResponseBody,
      ...(samplers.length > 0 && !readsAlways ? { holdsAnswer: sampled(samplers, failed) } : {}),
      unusualHeaders: keptUnusualHeaders(operation, owned),
      failed,
    });
  }
  return chains;
}

/**
 * Held when any sampler wants it; each is asked, since each may note its own decision. One that
 * throws holds the answer: judged is the safe side.
 */
function sampled(
  samplers: readonly Step<(exchange: CoreExchange) => boolean>[],
  failed: PolicyFailure,
): (exchange: CoreExchange) => boolean {
  return (exchange) => {
    let holds = false;
    for (const step of samplers) {
      try {
        if (step.run(exchange)) holds = true;
      } catch (error) {
        failed(step.policy, "readsResponseBody", exchange, error);
        holds = true;
      }
    }
    return holds;
  };
}

export function buildArrival(policies: readonly NamedPolicy[], failed: PolicyFailure): ArrivalPhases {
  const arrival: Step<ArrivalPhase>[] = [];
  const credentialCheckers: Step<(value: string) => boolean>[] = [];
  for (const { name: policy, instance } of policies) {
    if (instance.onArrival) arrival.push({ policy, run: instance.onArrival.bind(instance) });
    if (instance.recognizesCredential) {
      credentialCheckers.push({ policy, run: instance.recognizesCredential.bind(instance) });
    }
  }
  return { arrival, credentialCheckers, failed };
}

// The runners. Each catches what a policy's phase throws, so that a bug in one policy fails the
// request it was judging (500 INTERNAL_ERROR), or leaves an answer as it was, never the process.

/** Every arrival phase, until one answers. */
export function runArrival(
  phases: ArrivalPhases,
  exchange: CoreExchange,
): GatewayError | LocalReply | undefined {
  for (const step of phases.arrival) {
    try {
      const reply = step.run(exchange);
      if (reply) return reply;
    } catch (error) {
      phases.failed(step.policy, "onArrival", exchange, error);
      return POLICY_FAILED;
    }
  }
  return undefined;
}

/** Whether some policy knows the value as a credential; one that fails says yes, so it is never echoed. */
export function isCredential(phases: ArrivalPhases, value: string): boolean {
  for (const step of phases.credentialCheckers) {
    try {
      if (step.run(value)) return true;
    } catch (error) {
      phases.failed(step.policy, "recognizesCredential", undefined, error);
      return true;
    }
  }
  return false;
}

/** The request phases (headers, path and query), until one refuses. */
export function runRequest(chain: Chain, exchange: CoreExchange): GatewayError | undefined {
  return runJudging(chain, chain.request, "onRequest", exchange);
}

/** The request-body phases, once the body has been read, until one refuses. */
export function runRequestBody(chain: Chain, exchange: CoreExchange): GatewayError | undefined {
  return runJudging(chain, chain.requestBody, "onRequestBody", exchange);
}

function runJudging(
  chain: Chain,
  steps: readonly Step<JudgingPhase>[],
  phase: "onRequest" | "onRequestBody",
  exchange: CoreExchange,
): GatewayError | undefined {
  for (const step of steps) {
    try {
      const error = step.run(exchange);
      if (error) return error;
    } catch (error) {
      chain.failed(step.policy, phase, exchange, error);
      return POLICY_FAILED;
    }
  }
  return undefined;
}

/** The response phases on the backend's answer, in reverse order, until one refuses it. */
export function runResponse(
  chain: Chain,
  exchange: CoreExchange,
  answer: UpstreamAnswer,
): GatewayError | undefined {
  for (const step of chain.response) {
    try {
      const error = step.run(exchange, answer);
      if (error) return error;
    } catch (error) {
      chain.failed(step.policy, "onResponse", exchange, error);
      return POLICY_FAILED;
    }
  }
  return undefined;
}

/** Every reply phase on an answer's headers; one that throws leaves them as they were. */
export function runReply(
  chain: Chain,
  exchange: CoreExchange,
  status: number,
  headers: OutgoingHttpHeaders,
): void {
  for (const step of chain.reply) {
    try {
      step.run(exchange, status, headers);
    } catch (error) {
      chain.failed(step.policy, "onReply", exchange, error);
    }
  }
}

// Each operation's phases, built once at start-up: the policies' phases in their fixed order on
// the way in, in reverse on the way out, as layers unwinding; and every phase wrapped so that a
// policy that throws fails the request it was judging, not the process. Uncaught, one request
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
  phase: string,
  exchange: CoreExchange | undefined,
  error: unknown,
) => void;

/** One operation's phases, every one guarded, in the order they run. */
export interface Chain {
  readonly request: readonly ((exchange: CoreExchange) => GatewayError | undefined)[];
  readonly requestBody: readonly ((exchange: CoreExchange) => GatewayError | undefined)[];
  readonly response: readonly ((
    exchange: CoreExchange,
    answer: UpstreamAnswer,
  ) => GatewayError | undefined)[];
  readonly reply: readonly ((exchange: CoreExchange, status: number, headers: OutgoingHttpHeaders) => void)[];
  /** Some response phase reads the body: JSON answers are then buffered up to the cap. */
  readonly readsResponseBody: boolean;
  /** The operation's declared header parameters whose unusual names may pass (request-headers.ts). */
  readonly unusualHeaders: ReadonlySet<string>;
}

/** What runs before routing, for every request, and the credential question asked of a client's request id. */
export interface ArrivalPhases {
  readonly arrival: readonly ((exchange: CoreExchange) => GatewayError | LocalReply | undefined)[];
  readonly isCredential: (value: string) => boolean;
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
    const request: Chain["request"][number][] = [];
    const requestBody: Chain["requestBody"][number][] = [];
    const response: Chain["response"][number][] = [];
    const reply: Chain["reply"][number][] = [];
    let readsResponseBody = false;
    for (const { name, instance } of policies) {
      const phases = instance.forOperation(operation);
      if (!phases) continue;
      const onRequest = guard(name, "onRequest", phases, phases.onRequest, failed, POLICY_FAILED);
      const onRequestBody = guard(name, "onRequestBody", phases, phases.onRequestBody, failed, POLICY_FAILED);
      const onResponse = guard(name, "onResponse", phases, phases.onResponse, failed, POLICY_FAILED);
      const onReply = guard(name, "onReply", phases, phases.onReply, failed, undefined);
      if (onRequest) request.push(onRequest);
      if (onRequestBody) requestBody.push(onRequestBody);
      if (onResponse) response.push(onResponse);
      if (onReply) reply.push(onReply);
      readsResponseBody ||= phases.readsResponseBody === true && onResponse !== undefined;
    }
    chains.set(operation, {
      request,
      requestBody,
      response: response.reverse(),
      reply: reply.reverse(),
      readsResponseBody,
      unusualHeaders: keptUnusualHeaders(operation, owned),
    });
  }
  return chains;
}

export function buildArrival(policies: readonly NamedPolicy[], failed: PolicyFailure): ArrivalPhases {
  const arrival: ArrivalPhases["arrival"][number][] = [];
  const credentialCheckers: ((value: string) => boolean)[] = [];
  for (const { name, instance } of policies) {
    const onArrival = guard(name, "onArrival", instance, instance.onArrival, failed, POLICY_FAILED);
    if (onArrival) arrival.push(onArrival);
    // One that fails says yes, so the value is not echoed.
    const recognizes = guard(
      name,
      "recognizesCredential",
      instance,
      instance.recognizesCredential,
      failed,
      true,
    );
    if (recognizes) credentialCheckers.push(recognizes);
  }
  return {
    arrival,
    isCredential(value) {
      for (const recognizes of credentialCheckers) if (recognizes(value)) return true;
      return false;
    },
  };
}

/**
 * The phase bound to its owner, answering `failedWith` when it throws. Phases take at most three
 * arguments, passed as they are (no rest array per call); the first is the exchange, but for a
 * credential check.
 */
function guard<F extends (...args: never[]) => unknown>(
  policy: string,
  phaseName: string,
  owner: object,
  phase: F | undefined,
  failed: PolicyFailure,
  failedWith: ReturnType<F>,
): F | undefined {
  if (!phase) return undefined;
  const bound = phase.bind(owner) as unknown as (a: unknown, b: unknown, c: unknown) => ReturnType<F>;
  return ((a: unknown, b: unknown, c: unknown) => {
    try {
      return bound(a, b, c);
    } catch (error) {
      failed(policy, phaseName, typeof a === "object" ? (a as CoreExchange) : undefined, error);
      return failedWith;
    }
  }) as unknown as F;
}

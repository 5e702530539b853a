// A policy that throws fails the request it was judging, not the process. Uncaught, one request
// reaching a bug in one policy would end every request in flight on the process and, sent again,
// keep it restarting. Each phase of a policy is wrapped once, at start-up: a judging phase that
// throws refuses the request with 500 INTERNAL_ERROR, an answer phase leaves the answer as it was,
// and the failure is reported for the log. The core's own code is not wrapped: a throw there
// still ends the process (serve.ts), since the state of the exchange is then unknown.
import type { OutgoingHttpHeaders } from "node:http";
import { type GatewayError, gatewayError } from "./errors.ts";
import type { Exchange, LocalReply, OperationPolicy, PolicyInstance, UpstreamAnswer } from "./policy.ts";

/** A policy instance and the name it is configured under (`policies.<name>`). */
export interface NamedPolicy {
  readonly name: string;
  readonly instance: PolicyInstance;
}

/** Told of every failure: which policy, which phase, the request (when there is one) and what was thrown. */
export type PolicyFailure = (
  policy: string,
  phase: string,
  exchange: Exchange | undefined,
  error: unknown,
) => void;

const POLICY_FAILED: GatewayError = gatewayError("INTERNAL_ERROR");

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
      failed(policy, phaseName, typeof a === "object" ? (a as Exchange) : undefined, error);
      return failedWith;
    }
  }) as unknown as F;
}

export function guardArrival(
  { name, instance }: NamedPolicy,
  failed: PolicyFailure,
): ((exchange: Exchange) => GatewayError | LocalReply | undefined) | undefined {
  return guard(name, "onArrival", instance, instance.onArrival, failed, POLICY_FAILED);
}

/** A policy's question whether a value is a credential it knows; one that fails says yes, so the value is not echoed. */
export function guardCredentialCheck(
  { name, instance }: NamedPolicy,
  failed: PolicyFailure,
): ((value: string) => boolean) | undefined {
  return guard(name, "recognizesCredential", instance, instance.recognizesCredential, failed, true);
}

/** The phases of one policy for one operation, each wrapped; undefined where the policy has none. */
export interface GuardedPhases {
  readonly request: ((exchange: Exchange) => GatewayError | undefined) | undefined;
  readonly requestBody: ((exchange: Exchange) => GatewayError | undefined) | undefined;
  readonly response: ((exchange: Exchange, answer: UpstreamAnswer) => GatewayError | undefined) | undefined;
  readonly reply: ((exchange: Exchange, status: number, headers: OutgoingHttpHeaders) => void) | undefined;
  readonly readsResponseBody: boolean;
}

export function guardOperation(name: string, phases: OperationPolicy, failed: PolicyFailure): GuardedPhases {
  return {
    request: guard(name, "onRequest", phases, phases.onRequest, failed, POLICY_FAILED),
    requestBody: guard(name, "onRequestBody", phases, phases.onRequestBody, failed, POLICY_FAILED),
    response: guard(name, "onResponse", phases, phases.onResponse, failed, POLICY_FAILED),
    reply: guard(name, "onReply", phases, phases.onReply, failed, undefined),
    readsResponseBody: phases.readsResponseBody === true && phases.onResponse !== undefined,
  };
}

// A policy that throws fails the request it was judging, not the process. Uncaught, one request
// reaching a bug in one policy would end every request in flight on the process and, sent again,
// keep it restarting. Each phase of a policy is wrapped once, at start-up: the request is refused
// with 500 INTERNAL_ERROR (an answer phase that throws leaves the answer as it was), and the
// failure is reported for the log. The core's own code is not wrapped: a throw there still ends
// the process (serve.ts), since the state of the exchange is then unknown.
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

type Judge = (exchange: Exchange) => GatewayError | undefined;

export function guardArrival(
  policy: NamedPolicy,
  failed: PolicyFailure,
): ((exchange: Exchange) => GatewayError | LocalReply | undefined) | undefined {
  const { instance } = policy;
  if (!instance.onArrival) return undefined;
  const phase = instance.onArrival.bind(instance);
  return (exchange) => {
    try {
      return phase(exchange);
    } catch (error) {
      failed(policy.name, "onArrival", exchange, error);
      return POLICY_FAILED;
    }
  };
}

/** A policy's question whether a value is a credential it knows; one that fails says yes, so the value is not echoed. */
export function guardCredentialCheck(
  policy: NamedPolicy,
  failed: PolicyFailure,
): ((value: string) => boolean) | undefined {
  const { instance } = policy;
  if (!instance.recognizesCredential) return undefined;
  const recognizes = instance.recognizesCredential.bind(instance);
  return (value) => {
    try {
      return recognizes(value);
    } catch (error) {
      failed(policy.name, "recognizesCredential", undefined, error);
      return true;
    }
  };
}

/** The phases of one policy for one operation, each wrapped; undefined where the policy has none. */
export interface GuardedPhases {
  readonly request: Judge | undefined;
  readonly requestBody: Judge | undefined;
  readonly response: ((exchange: Exchange, answer: UpstreamAnswer) => GatewayError | undefined) | undefined;
  readonly reply: ((exchange: Exchange, status: number, headers: OutgoingHttpHeaders) => void) | undefined;
  readonly readsResponseBody: boolean;
}

export function guardOperation(name: string, phases: OperationPolicy, failed: PolicyFailure): GuardedPhases {
  const judge = (phaseName: string, phase: Judge | undefined): Judge | undefined => {
    if (!phase) return undefined;
    const bound = phase.bind(phases);
    return (exchange) => {
      try {
        return bound(exchange);
      } catch (error) {
        failed(name, phaseName, exchange, error);
        return POLICY_FAILED;
      }
    };
  };
  const onResponse = phases.onResponse?.bind(phases);
  const onReply = phases.onReply?.bind(phases);
  return {
    request: judge("onRequest", phases.onRequest),
    requestBody: judge("onRequestBody", phases.onRequestBody),
    response: onResponse
      ? (exchange, answer) => {
          try {
            return onResponse(exchange, answer);
          } catch (error) {
            failed(name, "onResponse", exchange, error);
            return POLICY_FAILED;
          }
        }
      : undefined,
    reply: onReply
      ? (exchange, status, headers) => {
          try {
            onReply(exchange, status, headers);
          } catch (error) {
            failed(name, "onReply", exchange, error);
          }
        }
      : undefined,
    readsResponseBody: phases.readsResponseBody === true && onResponse !== undefined,
  };
}

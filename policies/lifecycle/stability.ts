// An operation marked experimental or beta: the marker in a header on every answer, every call
// counted per consumer, and in production an experimental operation may answer 403.
import type { OutgoingHttpHeaders } from "node:http";
import type { Counter } from "prom-client";
import type { Operation } from "../../src/openapi.ts";
import type { Exchange, GatewayError } from "../../src/policy.ts";
import { ANONYMOUS, type ConsumerCounter } from "./consumers.ts";
import { errors } from "./errors.ts";
import type { Stability } from "./facts.ts";

/** The response header that carries the marker to the client. */
export const STABILITY_HEADER = "x-api-stability";

export interface StabilitySetting {
  readonly basePath: string;
  /** Production with experimentalInProduction: "refuse". */
  readonly refuseExperimental: boolean;
  readonly calls: Counter<"operation" | "stability" | "consumer">;
  readonly countBy: ConsumerCounter;
}

export function stabilityPhases(operation: Operation, marker: Stability, setting: StabilitySetting) {
  const refusal =
    marker === "experimental" && setting.refuseExperimental
      ? errors.error(
          "OPERATION_NOT_AVAILABLE",
          `${operation.method} ${setting.basePath}${operation.path} is experimental and not available in production`,
        )
      : undefined;
  const countCall = setting.countBy((label) => setting.calls.labels(operation.id, marker, label));
  return {
    onRequest(exchange: Exchange): GatewayError | undefined {
      countCall(exchange.consumer ?? ANONYMOUS);
      exchange.notes.stability = marker;
      return refusal;
    },
    onReply(_exchange: Exchange, _status: number, headers: OutgoingHttpHeaders): void {
      headers[STABILITY_HEADER] = marker;
    },
  };
}

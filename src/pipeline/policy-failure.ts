// A policy's phase that throws fails its request, not the process (chains.ts): this is the line
// that says so. What a policy threw may quote the request it failed on: redacted.
import type { Logger } from "pino";
import type { PolicyFailure } from "./chains.ts";
import type { CoreExchange } from "./exchange.ts";

export function logPolicyFailure(logger: Logger): PolicyFailure {
  return (policy, phase, exchange, error) => {
    if (exchange) exchange.facts.policyFailed = `${policy} ${phase}`;
    logger.error(
      {
        reqId: exchange?.requestId,
        operation: exchange?.operation?.id,
        policy,
        phase,
        error: redactedError(error, exchange),
      },
      "policy failed",
    );
  };
}

function redactedError(
  error: unknown,
  exchange: CoreExchange | undefined,
): string | { message: string; stack: string } {
  const redact = (text: string) => (exchange ? exchange.redact(text) : text);
  if (!(error instanceof Error)) return redact(String(error));
  return { message: redact(error.message), stack: redact(error.stack ?? "") };
}

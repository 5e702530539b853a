// The fleet-wide report's input: every replica writes one deprecated-call line per call, so
// the aggregated logs of all of them say what no single process's /deprecations can.
import { type CallerTally, DEPRECATED_CALL_MSG } from "./deprecation-report.ts";

/**
 * Feeds one log line to the tally when it is a deprecated-call line; anything else (other
 * messages, a collector's prefix before the JSON, broken lines) is skipped. Returns whether it counted.
 */
export function recordLogLine(tally: CallerTally, line: string): boolean {
  const start = line.indexOf("{");
  if (start === -1 || !line.includes(DEPRECATED_CALL_MSG)) return false;
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line.slice(start)) as Record<string, unknown>;
  } catch {
    return false;
  }
  const { msg, operation, consumer, calledAt, userAgent } = entry;
  if (msg !== DEPRECATED_CALL_MSG || typeof operation !== "string" || typeof consumer !== "string") {
    return false;
  }
  const at = typeof calledAt === "string" ? Date.parse(calledAt) : Number.NaN;
  if (Number.isNaN(at)) return false;
  tally.record(operation, consumer, at, typeof userAgent === "string" ? userAgent : "");
  return true;
}

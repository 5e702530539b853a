// The drift report rebuilt from log lines: every replica writes one "contract violation" line per
// violation, so the aggregated logs of all of them give the fleet's figures in the shape of
// /contract/violations. Lines come in any order: first and last seen are a minimum and a maximum.
import { logEntry } from "../../src/log-lines.ts";
import {
  CONTRACT_VIOLATION_MSG,
  type ContractMode,
  type ContractReport,
  type Drift,
  withoutArrayIndexes,
} from "./report.ts";

interface OperationTally {
  /** The mode of the most recent line: the config may have changed over the period. */
  mode: ContractMode;
  modeAt: string;
  violations: number;
  readonly byRule: Map<string, number>;
  /** By rule and place; bounded by the document's rules and schemas, as the policy's report. */
  readonly drift: Map<string, Drift>;
}

export class ViolationTally {
  readonly #operations = new Map<string, OperationTally>();

  /** Feeds one log line when it is a contract-violation line; returns whether it counted. */
  recordLogLine(line: string): boolean {
    const entry = logEntry(line, CONTRACT_VIOLATION_MSG);
    if (entry === undefined) return false;
    const { operation, rule, at, time } = entry;
    if (typeof operation !== "string" || typeof rule !== "string") return false;
    // `at` is the gateway's clock; lines from before it was logged have only pino's time.
    const when = typeof at === "string" ? at : time;
    if (typeof when !== "string" || Number.isNaN(Date.parse(when))) return false;
    const seen = new Date(Date.parse(when)).toISOString();
    const text = (name: string) => (typeof entry[name] === "string" ? (entry[name] as string) : "");
    const mode = entry.mode === "enforce" ? "enforce" : "report";
    const pointer = text("pointer");
    let tally = this.#operations.get(operation);
    if (tally === undefined) {
      tally = { mode, modeAt: seen, violations: 0, byRule: new Map(), drift: new Map() };
      this.#operations.set(operation, tally);
    }
    if (seen > tally.modeAt) {
      tally.mode = mode;
      tally.modeAt = seen;
    }
    tally.violations++;
    tally.byRule.set(rule, (tally.byRule.get(rule) ?? 0) + 1);
    const where = withoutArrayIndexes(pointer);
    const example = {
      requestId: text("reqId"),
      at: seen,
      upstreamStatus: typeof entry.upstreamStatus === "number" ? entry.upstreamStatus : 0,
      pointer,
      message: text("message"),
      excerpt: text("excerpt"),
      mode,
      action: entry.action === "rejected" ? "rejected" : "passed",
    } as const;
    const key = `${rule} ${where}`;
    const known = tally.drift.get(key);
    if (known === undefined) {
      tally.drift.set(key, { rule, where, count: 1, firstSeen: seen, lastSeen: seen, last: example });
      return true;
    }
    known.count++;
    if (seen < known.firstSeen) known.firstSeen = seen;
    if (seen >= known.lastSeen) {
      known.lastSeen = seen;
      known.last = example;
    }
    return true;
  }

  /** The operations that had violations, each with its `keep` most recently seen kinds of drift. */
  report(keep: number): ContractReport {
    const operations: [string, ContractReport["operations"][string]][] = [];
    for (const [operation, tally] of this.#operations) {
      const recent = [...tally.drift.values()].sort((a, b) =>
        a.lastSeen < b.lastSeen ? 1 : a.lastSeen > b.lastSeen ? -1 : 0,
      );
      operations.push([
        operation,
        {
          mode: tally.mode,
          violations: tally.violations,
          byRule: Object.fromEntries(tally.byRule),
          recent: recent.slice(0, keep),
        },
      ]);
    }
    // fromEntries defines own properties: an operation named __proto__ in a line stays a name.
    return { operations: Object.fromEntries(operations) };
  }
}

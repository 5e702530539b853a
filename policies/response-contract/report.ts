// The drift report of the response contract (/contract/violations): per operation, the totals by
// rule and the most recently seen distinct violations, each with its last example. Kept here,
// apart from the policy that judges answers, because three jobs share its shape: noting a
// violation in one process, merging several worker processes' parts, and rendering the result.
import type { ServerResponse } from "node:http";
import { LRUCache } from "lru-cache";
import { gatewayError } from "../../src/errors.ts";
import { sendError, sendJson } from "../../src/replies.ts";

/** An array index in a JSON pointer. */
const POINTER_ARRAY_INDEX = /\/[0-9]+(?=\/|$)/g;

/**
 * The place in the schema a violation's pointer names, each array index replaced by "*" (/0/name
 * and /7/name are one place): the report and the log lines count violations by place, not by
 * element.
 */
export function withoutArrayIndexes(pointer: string): string {
  return pointer.replace(POINTER_ARRAY_INDEX, "/*");
}

export type ContractMode = "enforce" | "report" | "off";

const NO_SUCH_OPERATION = gatewayError("NOT_FOUND", "No such operation");
/** The msg of the log line written for every violation; log-based reports read these lines. */
export const CONTRACT_VIOLATION_MSG = "contract violation";

/** One broken promise of an answer, described once it is found. */
export interface Violation {
  /** Bounded: status, media-type, size, encoding, json, schema:<keyword>, or a document rule name. */
  readonly rule: string;
  /** JSON pointer of the offending field in the answer's body ("" for the whole answer). */
  readonly pointer: string;
  readonly message: string;
  /** A short, redacted rendering of the offending value. */
  readonly excerpt: string;
  /** Found by an inferred rule: reported, never enforced, whatever the operation's mode. */
  readonly reportOnly?: boolean;
}

export interface DriftExample {
  readonly requestId: string;
  readonly at: string;
  readonly upstreamStatus: number;
  readonly pointer: string;
  readonly message: string;
  readonly excerpt: string;
  readonly mode: "enforce" | "report";
  readonly action: "rejected" | "passed";
}

/** One kind of drift: a rule broken at one place (array indices folded into *). */
export interface Drift {
  readonly rule: string;
  readonly where: string;
  count: number;
  firstSeen: string;
  lastSeen: string;
  last: DriftExample;
}

export interface OperationDrift {
  readonly mode: ContractMode;
  violations: number;
  byRule: Record<string, number>;
  /** Most recently seen first. */
  recent: Drift[];
}

export interface ContractReport {
  readonly operations: Record<string, OperationDrift>;
}

export interface DriftLog {
  /** Counts one violation of an operation and keeps it as that kind of drift's latest example. */
  note(operation: string, violation: Violation, example: DriftExample): void;
  /** This process's part of the report. */
  collect(): ContractReport;
}

/** Bounded: the rule set bounds the totals, an LRU of `keep` entries the distinct violations. */
export function createDriftLog(
  operations: Iterable<readonly [id: string, mode: ContractMode]>,
  keep: number,
): DriftLog {
  const drift = new Map<
    string,
    { mode: ContractMode; violations: number; byRule: Map<string, number>; recent: LRUCache<string, Drift> }
  >();
  for (const [id, mode] of operations) {
    drift.set(id, { mode, violations: 0, byRule: new Map(), recent: new LRUCache({ max: keep }) });
  }
  return {
    note(operation, violation, last) {
      const entry = drift.get(operation);
      if (!entry) return;
      entry.violations++;
      entry.byRule.set(violation.rule, (entry.byRule.get(violation.rule) ?? 0) + 1);
      const where = withoutArrayIndexes(violation.pointer);
      const key = `${violation.rule} ${where}`;
      const known = entry.recent.get(key);
      if (known) {
        known.count++;
        known.lastSeen = last.at;
        known.last = last;
      } else {
        entry.recent.set(key, {
          rule: violation.rule,
          where,
          count: 1,
          firstSeen: last.at,
          lastSeen: last.at,
          last,
        });
      }
    },
    collect() {
      const operations: Record<string, OperationDrift> = {};
      for (const [id, entry] of drift) {
        operations[id] = {
          mode: entry.mode,
          violations: entry.violations,
          byRule: Object.fromEntries(entry.byRule),
          recent: [...entry.recent.values()].map((d) => ({ ...d })),
        };
      }
      return { operations };
    },
  };
}

/** Several processes' parts into one, keeping the `keep` most recently seen examples per operation. */
export function mergeReports(parts: readonly ContractReport[], keep: number): ContractReport {
  const operations: Record<string, OperationDrift> = {};
  for (const part of parts) {
    for (const [id, drift] of Object.entries(part.operations)) {
      let into = operations[id];
      if (into === undefined) {
        into = { mode: drift.mode, violations: 0, byRule: {}, recent: [] };
        operations[id] = into;
      }
      into.violations += drift.violations;
      for (const [rule, count] of Object.entries(drift.byRule))
        into.byRule[rule] = (into.byRule[rule] ?? 0) + count;
      for (const entry of drift.recent) {
        const same = into.recent.find((d) => d.rule === entry.rule && d.where === entry.where);
        if (!same) {
          into.recent.push({ ...entry });
          continue;
        }
        same.count += entry.count;
        if (entry.firstSeen < same.firstSeen) same.firstSeen = entry.firstSeen;
        if (entry.lastSeen > same.lastSeen) {
          same.lastSeen = entry.lastSeen;
          same.last = entry.last;
        }
      }
    }
  }
  for (const drift of Object.values(operations)) {
    drift.recent.sort((a, b) => (a.lastSeen < b.lastSeen ? 1 : a.lastSeen > b.lastSeen ? -1 : 0));
    drift.recent.length = Math.min(drift.recent.length, keep);
  }
  return { operations };
}

export function renderReport(
  report: ContractReport,
  query: ReadonlyMap<string, string>,
  res: ServerResponse,
): void {
  const only = query.get("operation");
  if (only === undefined) return sendJson(res, 200, report);
  // Own properties only: ?operation=__proto__ would otherwise find every object's prototype.
  const drift = Object.hasOwn(report.operations, only) ? report.operations[only] : undefined;
  if (drift === undefined) return sendError(res, NO_SUCH_OPERATION);
  sendJson(res, 200, { operations: { [only]: drift } });
}

// Usage memory: what each consumer relies on, per operation (usage-memory.ts), so that the change
// review (npm run plan -- --against) can name whom a candidate document breaks. Kept per process
// on the ops port (/usage, behind the ops token like every report there) and written to the logs
// as "usage" lines, the calls since the last line, which npm run usage merges fleet-wide.
//
// The hot path pays a few bit sets per request: the query's names as the client sent them (before
// the limit policy defaults one), a body's members, and the status of every answer. What each
// operation records is laid out once (usage-memory.ts), so a request reads no pointer's text.
import type { ServerResponse } from "node:http";
import type { JSONSchemaType } from "ajv";
import { ChangeReviewer, DAY_MS } from "../../src/change-review.ts";
import { reviewAdvice } from "../../src/change-review-text.ts";
import { definePolicy, type Exchange, type OperationPolicy, type OpsReport } from "../../src/policy.ts";
import { slices } from "../../src/slices.ts";
import { USAGE_MSG } from "./usage-log-lines.ts";
import { mergeRows, UsageMemory, type UsageRow } from "./usage-memory.ts";

export { USAGE_MSG } from "./usage-log-lines.ts";
export type { UsageRow } from "./usage-memory.ts";
export { mergeRows } from "./usage-memory.ts";

/** Who called without being authenticated (a public operation, a refused key). */
export const NO_CONSUMER = "(no consumer)";

export interface UsageOptions {
  /** Consumers kept per process; the least recently seen are dropped past it, and counted. */
  readonly maxConsumers: number;
  /** How often the calls since the last time are written to the logs; 0 never. */
  readonly logEverySeconds: number;
  /** The share of answers whose JSON members are read (held whole for it); 0 none. */
  readonly sampleAnswers: number;
}

const optionsSchema: JSONSchemaType<UsageOptions> = {
  type: "object",
  additionalProperties: false,
  required: [],
  description:
    "What each consumer relies on, per operation (calls, first and last seen, query parameters and enum values sent, statuses received): /usage on the ops port and `usage` log lines, read by the change review",
  properties: {
    maxConsumers: {
      type: "integer",
      minimum: 1,
      default: 10_000,
      description:
        "Consumers whose usage a process keeps; past it the least recently seen is dropped and counted (`evicted` in /usage)",
    },
    sampleAnswers: {
      type: "number",
      minimum: 0,
      maximum: 1,
      // Off unless asked: a chosen answer is held whole rather than streamed.
      default: 0,
      description:
        "The share of answers, chosen at random per request, whose JSON members are recorded (`answerMembers`, `sampled`), e.g. 0.01: such an answer is held whole, up to `server.maxResponseBodyBytes`, rather than streamed; 0 (the default) records none, and the change review then names every caller of an operation whose answer loses a member",
    },
    logEverySeconds: {
      type: "integer",
      minimum: 0,
      default: 3600,
      description:
        "How often each process writes a `usage` log line per consumer and operation called since the last ones (and once at shutdown); 0 writes none",
    },
  },
};

export interface UsageReport {
  readonly generatedAt: string;
  /** The earliest start of the processes' memory: figures start again at every deploy. */
  readonly countingSince: string;
  /** Consumers held, summed over the processes. */
  readonly consumers: number;
  readonly evicted: number;
  readonly rows: readonly UsageRow[];
}

/** Rows shown by one answer: the report's work does not grow with the consumers held. */
const ROWS_SHOWN = 1000;

/** A prepared report answers the requests of this long: a client asking in a loop does not rebuild it. */
const SNAPSHOT_REUSE_MS = 2000;

interface PreparedUsage {
  readonly report: UsageReport;
  /** The answer without a filter, written once per snapshot. */
  readonly unfiltered: string;
}

function usageBody(report: UsageReport, matching: readonly UsageRow[]): string {
  return JSON.stringify({
    generatedAt: report.generatedAt,
    countingSince: report.countingSince,
    consumers: report.consumers,
    evicted: report.evicted,
    rowsMatching: matching.length,
    // Most recently seen first: the rows an owner asks about.
    rows: matching.slice(0, ROWS_SHOWN),
  });
}

const report: OpsReport<UsageReport, UsageOptions, PreparedUsage> = {
  merge(parts) {
    if (parts.length === 1) return parts[0] as UsageReport;
    return {
      generatedAt: parts.reduce((latest, p) => (p.generatedAt > latest ? p.generatedAt : latest), ""),
      countingSince: parts.reduce(
        (earliest, p) => (earliest === "" || p.countingSince < earliest ? p.countingSince : earliest),
        "",
      ),
      consumers: parts.reduce((sum, p) => sum + p.consumers, 0),
      evicted: parts.reduce((sum, p) => sum + p.evicted, 0),
      rows: mergeRows(parts.flatMap((p) => p.rows)),
    };
  },
  async prepare(merged) {
    return {
      prepared: { report: merged, unfiltered: usageBody(merged, merged.rows) },
      // Measured: 10,000 consumers asked for in a loop held the loop 35 ms when each request
      // collected and wrote the report anew, against 6 ms for the other reports.
      reuseForMs: merged.rows.length > ROWS_SHOWN ? SNAPSHOT_REUSE_MS : 0,
    };
  },
  render(prepared, query, res: ServerResponse) {
    const consumer = query.get("consumer");
    const operation = query.get("operation");
    const body =
      consumer === undefined && operation === undefined
        ? prepared.unfiltered
        : usageBody(
            prepared.report,
            prepared.report.rows.filter(
              (row) =>
                (consumer === undefined || row.consumer === consumer) &&
                (operation === undefined || row.operation === operation),
            ),
          );
    res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" });
    res.end(body);
  },
};

export default definePolicy<UsageOptions>({
  name: "usage",
  optionsSchema,
  opsReports: { "/usage": report },
  create(options, { api, logger, now }) {
    const memory = new UsageMemory(api, options.maxConsumers, now());
    const countingSince = new Date(memory.countingSince).toISOString();

    // In slices: a hundred thousand rows take a quarter of a second to read, which must not hold
    // the loop.
    let writing: Promise<void> | undefined;
    const writeLines = async () => {
      const work = slices();
      for (const row of memory.rows(true)) {
        logger.info(row, USAGE_MSG);
        if (work.due()) await work.next();
      }
    };
    const flush = () => {
      writing ??= writeLines().finally(() => {
        writing = undefined;
      });
      return writing;
    };
    const timer =
      options.logEverySeconds > 0
        ? setInterval(() => void flush(), options.logEverySeconds * 1000)
        : undefined;
    timer?.unref();

    return {
      forOperation(operation) {
        const usage = memory.of(operation);
        if (usage === undefined) return undefined;
        // Chosen at random per request before it is forwarded (never every n-th, which a
        // backend's periodic behaviour could line up with): only a chosen answer is held whole.
        const chosen = new WeakSet<Exchange>();
        const sampling =
          options.sampleAnswers > 0 &&
          [...operation.responses.values()].some((r) => r.mediaType !== undefined);
        const answers: OperationPolicy = sampling
          ? {
              readsResponseBody(exchange) {
                if (Math.random() >= options.sampleAnswers) return false;
                chosen.add(exchange);
                return true;
              },
              onResponse(exchange, answer) {
                if (answer.body === undefined || !chosen.has(exchange)) return undefined;
                usage.receivedBody(exchange.consumer ?? NO_CONSUMER, answer.status, answer.body.text());
                return undefined;
              },
            }
          : {};
        // Request validation runs later: the body may not be JSON, which records nothing.
        const bodies: OperationPolicy =
          operation.requestBody === undefined
            ? {}
            : {
                onRequestBody(exchange) {
                  if (exchange.body !== undefined)
                    usage.sentBody(exchange.consumer ?? NO_CONSUMER, exchange.body);
                  return undefined;
                },
              };
        return {
          ...answers,
          ...bodies,
          // Before the limit policy defaults a page size: the names the client sent.
          onRequest(exchange) {
            usage.sent(exchange.consumer ?? NO_CONSUMER, exchange.query);
            return undefined;
          },
          // The one phase that reads the clock: a call is an answer.
          onReply(exchange, status) {
            usage.answered(exchange.consumer ?? NO_CONSUMER, status, now());
          },
        };
      },
      collectReports: {
        "/usage": async (): Promise<UsageReport> => {
          const work = slices();
          const rows: UsageRow[] = [];
          for (const row of memory.rows()) {
            rows.push(row);
            if (work.due()) await work.next();
          }
          return {
            generatedAt: new Date(now()).toISOString(),
            countingSince,
            consumers: memory.consumers,
            evicted: memory.evicted,
            rows,
          };
        },
      },
      // At a reload: the change review against what this process remembers, since it started.
      adviseOnChange(candidate, differences) {
        const at = now();
        const reviewer = new ChangeReviewer({
          running: { name: "running", api },
          candidate: { name: "candidate", api: candidate },
          differences,
          now: at,
          days: Math.max(1, Math.ceil((at - memory.countingSince) / DAY_MS)),
          maxConsumers: options.maxConsumers,
        });
        reviewer.markLogsGiven();
        for (const row of memory.rows()) reviewer.readUsage({ ...row, lastSeen: Date.parse(row.lastSeen) });
        return reviewAdvice(reviewer.review());
      },
      async close() {
        if (timer !== undefined) clearInterval(timer);
        if (options.logEverySeconds > 0) await flush();
      },
    };
  },
});

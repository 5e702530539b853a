// How a cluster primary answers the ops port for its whole group: it asks every live worker for
// its part (metrics, or a report), waits a bounded time, merges the parts with what workers that
// died had counted, and hands the result to the ops handler as its source.
import type { Worker } from "node:cluster";
import { AggregatorRegistry, type Registry } from "prom-client";
import { openMetricsText } from "../open-metrics.ts";
import type { OpsSource, ServedReport } from "../ops.ts";
import {
  COLLECT,
  COLLECTED,
  COUNTED,
  type CollectedMessage,
  type CollectMessage,
  type CollectRequest,
  type CountedMessage,
  type MetricJson,
  type MetricsPart,
  typeOf,
} from "./protocol.ts";

/** A worker that does not answer in time is represented by what it said last. */
const COLLECT_TIMEOUT_MS = 3000;

/** What the primary keeps of one worker's answers. */
const DOCUMENT_INFO = "gateway_document_info";

export interface Parts {
  /** What the current worker said last, used when it does not answer in time and kept when it dies. */
  metrics: MetricsPart | undefined;
  readonly reports: Map<string, unknown>;
}

export interface GroupCollection {
  readonly source: OpsSource;
  /** Wires a new worker's answers, and what it tells unasked. */
  listen(worker: Worker): void;
  /** A worker died: what it had counted stays in the group's figures (a counter never goes down). */
  retire(parts: Parts): void;
}

export function createGroupCollection(options: {
  /** The live workers with their parts (a worker's answer counts only if it still holds its slot). */
  live(): readonly { readonly worker: Worker; readonly parts: Parts; holds(worker: Worker): boolean }[];
  readonly reports: ReadonlyMap<string, ServedReport>;
  /** The primary's own series (gateway_workers, restarts), refreshed by beforeScrape. */
  readonly registry: Registry;
  beforeScrape(): void;
  /** A policy's merge threw on a dead worker's part: the part is dropped, the primary goes on. */
  mergeFailed(path: string, error: unknown): void;
}): GroupCollection {
  const { reports, registry } = options;
  let retiredMetrics: MetricsPart[] = [];
  const retiredReports = new Map<string, unknown>();
  const pending = new Map<number, (reply: CollectedMessage | undefined) => void>();
  let nextId = 0;

  const ask = (worker: Worker, request: CollectRequest): Promise<CollectedMessage | undefined> =>
    new Promise((resolve) => {
      if (!worker.isConnected()) return resolve(undefined);
      const id = nextId++;
      const settle = (reply: CollectedMessage | undefined) => {
        clearTimeout(timer);
        pending.delete(id);
        resolve(reply);
      };
      const timer = setTimeout(settle, COLLECT_TIMEOUT_MS, undefined);
      pending.set(id, settle);
      const message: CollectMessage = { type: COLLECT, id, ...request };
      worker.send(message, (error: Error | null) => {
        if (error) settle(undefined);
      });
    });

  const askEach = (request: CollectRequest, keep: (parts: Parts, part: unknown) => void) =>
    Promise.all(
      options.live().map(async (slot) => {
        const { worker } = slot;
        const reply = await ask(worker, request);
        if (slot.holds(worker) && reply !== undefined) keep(slot.parts, reply.part);
      }),
    );

  /** Every worker's metrics, the dead ones' counts and the primary's own, as parts to merge. */
  const allParts = async (): Promise<MetricsPart[]> => {
    const answered = new Set<Parts>();
    await askEach({ what: "metrics" }, (parts, part) => {
      if (!Array.isArray(part)) return;
      parts.metrics = part as MetricsPart;
      answered.add(parts);
    });
    options.beforeScrape();
    const all: MetricsPart[] = [...retiredMetrics];
    for (const { parts } of options.live()) {
      if (!parts.metrics) continue;
      // A worker that did not answer in time is counted from what it said last, which may be
      // from before a document reload was committed: its counters still stand, but not its
      // word on which version serves, or a scrape would show two after the commit.
      all.push(answered.has(parts) ? parts.metrics : parts.metrics.filter((m) => m.name !== DOCUMENT_INFO));
    }
    all.push((await registry.getMetricsAsJSON()) as unknown as MetricsPart);
    return all;
  };

  const source: OpsSource = {
    metrics: async () => AggregatorRegistry.aggregate(await allParts()).metrics(),
    openMetrics: async () => openMetricsText(await allParts()),
    async reportParts(path) {
      await askEach({ what: "report", path }, (parts, part) => {
        if (part !== undefined) parts.reports.set(path, part);
      });
      const all: unknown[] = [];
      for (const { parts } of options.live()) if (parts.reports.has(path)) all.push(parts.reports.get(path));
      if (retiredReports.has(path)) all.push(retiredReports.get(path));
      return all;
    },
  };

  return {
    source,
    listen(worker) {
      worker.on("message", (message: unknown) => {
        const type = typeOf(message);
        if (type === COLLECTED) pending.get((message as CollectedMessage).id)?.(message as CollectedMessage);
        else if (type === COUNTED) {
          // Kept as the worker's last word: should it die before the next scrape, this is retired.
          const slot = options.live().find((live) => live.holds(worker));
          if (slot === undefined) return;
          const { metrics, reports: parts } = message as CountedMessage;
          if (Array.isArray(metrics)) slot.parts.metrics = metrics;
          if (Array.isArray(parts))
            for (const [path, part] of parts) if (part !== undefined) slot.parts.reports.set(path, part);
        }
      });
    },
    retire(parts) {
      if (parts.metrics) {
        const monotonic = parts.metrics.filter(
          (metric) => metric.type === "counter" || metric.type === "histogram",
        );
        retiredMetrics = [compact([...retiredMetrics, monotonic])];
      }
      for (const [path, part] of parts.reports) {
        const report = reports.get(path);
        if (!report) continue;
        // The merge is a policy's code, run in the primary: a throw there must not end the group.
        try {
          retiredReports.set(
            path,
            retiredReports.has(path) ? report.merge([retiredReports.get(path), part]) : part,
          );
        } catch (error) {
          options.mergeFailed(path, error);
        }
      }
      parts.metrics = undefined;
      parts.reports.clear();
    },
  };
}

/** Sums snapshots into one (synchronously, so it never races a scrape). */
function compact(parts: readonly MetricsPart[]): MetricsPart {
  return AggregatorRegistry.aggregate(parts as MetricsPart[])
    .getMetricsAsArray()
    .map((metric) => {
      const { name, help, type, aggregator, values } = metric as unknown as MetricJson;
      return { name, help, type, aggregator, values };
    });
}

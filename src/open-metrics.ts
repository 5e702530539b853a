// The OpenMetrics text of /metrics, for a scrape that asks for it (Prometheus does, to read
// exemplars): the request-duration histogram's buckets carry the trace id of a request that was
// traced, so a dashboard can go from a latency to a trace. Written from the registries' JSON (one
// process's, or every worker's), never by switching the live registry's content type: prom-client
// renames a counter for OpenMetrics by changing the metric object itself (it drops `_total` from
// its name), and every later Prometheus-text scrape would then name the counter without it.
// prom-client's own merge of workers (AggregatorRegistry.aggregate) keeps no exemplar and writes
// counters as `<name>_total_total`: both are put right here.
import Negotiator from "negotiator";
import { AggregatorRegistry, type Metric, type OpenMetricsContentType, Registry } from "prom-client";
import type { MetricJson, MetricsPart } from "./cluster/protocol.ts";

export const OPENMETRICS_CONTENT_TYPE = Registry.OPENMETRICS_CONTENT_TYPE;
export const PROMETHEUS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

// With their versions: an Accept that names one matches only that version.
const OPENMETRICS = "application/openmetrics-text; version=1.0.0";
/**
 * What /metrics writes, the default first: a client that names neither (or any type, or only an
 * older OpenMetrics) gets Prometheus text.
 */
const EXPOSITIONS = ["text/plain; version=0.0.4", OPENMETRICS];

/**
 * Whether a scrape's Accept prefers OpenMetrics 1.0.0 to Prometheus text. Prometheus 3 names
 * OpenMetrics 1.0.0 with `escaping=<scheme>` (how it wants UTF-8 names escaped), and Negotiator
 * matches an offer only when it has every parameter the client named: with it, Prometheus 3 got
 * Prometheus text and no exemplar. Every name the gateway writes is a classic one, the same
 * under each scheme, so the parameter is left out before negotiating.
 */
export function asksForOpenMetrics(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const ranges = accept.split(",").map((range) =>
    range
      .split(";")
      .filter((parameter) => parameter.split("=", 1)[0]?.trim().toLowerCase() !== "escaping")
      .join(";"),
  );
  return new Negotiator({ headers: { accept: ranges.join(",") } }).mediaType(EXPOSITIONS) === OPENMETRICS;
}

interface Exemplar {
  readonly labelSet: Readonly<Record<string, string>>;
  readonly value: number;
  readonly timestamp: number;
}

interface Sample {
  readonly metricName?: string;
  readonly labels: Readonly<Record<string, string | number>>;
  exemplar?: Exemplar | null;
}

/** One process's metrics (registry.getMetricsAsJSON()), or the parts of every worker, as OpenMetrics. */
export async function openMetricsText(parts: readonly MetricsPart[]): Promise<string> {
  const metrics =
    parts.length === 1
      ? (parts[0] as MetricsPart)
      : withNewestExemplars(
          (await AggregatorRegistry.aggregate(parts as never).getMetricsAsJSON()) as unknown as MetricsPart,
          parts,
        );
  const registry = new Registry<OpenMetricsContentType>();
  registry.setContentType(OPENMETRICS_CONTENT_TYPE);
  for (const metric of metrics) {
    // A counter's family is named without _total; prom-client adds it to the samples.
    const family = {
      ...metric,
      name: metric.type === "counter" ? metric.name.replace(/_total$/, "") : metric.name,
    };
    registry.registerMetric({ ...family, get: async () => family } as unknown as Metric);
  }
  return registry.metrics();
}

/** The merged metrics with, on each histogram bucket, the newest exemplar any part has for it. */
function withNewestExemplars(merged: MetricsPart, parts: readonly MetricsPart[]): MetricsPart {
  const newest = new Map<string, Exemplar>();
  for (const part of parts) {
    for (const metric of part) {
      if (metric.type !== "histogram") continue;
      for (const sample of metric.values as readonly Sample[]) {
        const exemplar = sample.exemplar;
        if (!exemplar) continue;
        const key = keyOf(sample);
        const had = newest.get(key);
        if (had === undefined || exemplar.timestamp > had.timestamp) newest.set(key, exemplar);
      }
    }
  }
  if (newest.size === 0) return merged;
  return merged.map((metric): MetricJson => {
    if (metric.type !== "histogram") return metric;
    const values = (metric.values as readonly Sample[]).map((sample) => {
      const exemplar = newest.get(keyOf(sample));
      return exemplar === undefined ? sample : { ...sample, exemplar };
    });
    return { ...metric, values };
  });
}

function keyOf(sample: Sample): string {
  const labels = Object.entries(sample.labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `${sample.metricName ?? ""}${JSON.stringify(labels)}`;
}

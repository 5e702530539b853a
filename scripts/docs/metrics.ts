// docs/reference/metrics.md: every metric the gateway registers, read from real prom-client
// registries: the core's instruments (src/metrics.ts), each policy's own, and the cluster
// primary's. prom-client's default process metrics are named, not listed: which it registers
// depends on the platform, and this page must read the same on every machine.
import { type MetricObject, Registry } from "prom-client";
import { primaryMetrics } from "../../src/cluster/primary.ts";
import { createMetrics } from "../../src/metrics.ts";
import type { AnyPolicyDefinition } from "../../src/policy-registry.ts";
import { byCodePoint, code, page, table } from "./markdown.ts";

const INTRO = `Every metric the gateway registers, generated from the prom-client registries the code builds: the
core's instruments (\`src/metrics.ts\`), each policy's own, and the two of the cluster primary, which exist only with
\`WORKERS\` > 1. They are served on the ops port only, at \`GET /metrics\`: Prometheus text, or OpenMetrics (with the
trace ids of traced requests as exemplars of \`http_server_request_duration_seconds\`) to a scrape that asks for it
in its \`Accept\` header, as Prometheus does; with several workers it
is one set of series for the whole process group, each worker's series combined as the column "Across workers" says.
Seconds, not milliseconds; counters end in \`_total\`; every label value comes from a bounded set. prom-client's
default metrics (\`process_*\`, \`nodejs_*\`: CPU, memory, heap, event loop lag, GC) are exported too and not listed
here: which of them exist depends on the platform.`;

interface Source {
  readonly by: string;
  readonly registry: Registry;
  /** The primary's series are its own: there is nothing to combine. */
  readonly combined: boolean;
}

export async function metricsPage(policies: readonly AnyPolicyDefinition[]): Promise<string> {
  const sources: Source[] = [
    // With a memory limit, so that the page lists the gauge a process under one exports.
    {
      by: "the core",
      registry: createMetrics({ defaultMetrics: false, memoryLimitBytes: 1 }).registry,
      combined: true,
    },
  ];
  for (const policy of policies) {
    if (policy.metrics === undefined) continue;
    const registry = new Registry();
    policy.metrics(registry);
    sources.push({ by: `policy ${code(policy.name)}`, registry, combined: true });
  }
  const primary = new Registry();
  primaryMetrics(primary);
  sources.push({ by: "the cluster primary", registry: primary, combined: false });

  const rows: [string, string[]][] = [];
  for (const { by, registry, combined } of sources) {
    const instruments = new Map(registry.getMetricsAsArray().map((metric) => [metric.name, metric]));
    for (const { name, type, help, aggregator } of await registry.getMetricsAsJSON()) {
      const labels = labelsOf(instruments.get(name));
      rows.push([
        name,
        [
          code(name),
          String(type),
          labels.length === 0 ? "—" : labels.map(code).join(", "),
          help,
          by,
          combined ? aggregator : "—",
        ],
      ]);
    }
  }
  rows.sort(([a], [b]) => byCodePoint(a, b));
  return page("Metrics reference", INTRO, [
    table(
      ["Metric", "Type", "Labels", "Help", "Registered by", "Across workers"],
      rows.map(([, cells]) => cells),
    ),
  ]);
}

// prom-client keeps an instrument's label names on it without declaring them in its types.
function labelsOf(metric: MetricObject | undefined): readonly string[] {
  return (metric as { labelNames?: readonly string[] } | undefined)?.labelNames ?? [];
}

// The prom-client registry and the instruments of the core: the HTTP histograms, the gateway's
// overhead, rejections and upstream-up. A policy registers its own on the same registry
// (PolicyDefinition.metrics), so that a worker's registry exports every family. Seconds, not milliseconds;
// every label value comes from a bounded set (operationIds, methods, status codes the document
// or the gateway knows, catalogue codes, consumers of the key file). The two HTTP histograms are OpenTelemetry's
// http.server.request.duration and http.client.request.duration named as an OpenTelemetry
// Prometheus exporter names them (dots become underscores, the unit a suffix), so dashboards
// built for those conventions work unchanged; `operation` is the gateway's own dimension.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import {
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  type LabelValues,
  Registry,
  type RegistryContentType,
} from "prom-client";
import type { Operation } from "./openapi.ts";
import { PROJECT_ROOT } from "./project-files.ts";
import { SLOW_READ_MS, slowFileReads } from "./trusted-file.ts";

/** The operation label of a request the description does not know: one value, never the raw path. */
export const UNMATCHED = "unmatched";

// OpenTelemetry's http.request.method: the methods of RFC 9110 and PATCH by name, anything else
// as _OTHER, so a client cannot mint label values with exotic methods on unknown paths.
const KNOWN_METHODS = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "DELETE",
  "CONNECT",
  "OPTIONS",
  "TRACE",
  "PATCH",
]);

const SUMS_NAMED_AS_COUNTERS = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
];

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
// The gateway's own share is micro- to milliseconds: prom-client's defaults start at 5 ms.
const OVERHEAD_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1];

export interface Metrics {
  readonly registry: Registry;
  /**
   * Every answer to a request, whoever gave it. `status` is a label from a bounded set:
   * statusLabel() of an answer the gateway gave itself, a StatusLabels' of the backend's.
   * `traceId`: the request's trace, when a span of it was sampled for export: its exemplar.
   */
  observeRequest(operation: string, method: string, status: string, seconds: number, traceId?: string): void;
  /** Every answer the backend gave (its status, before any policy replaced it, labelled by StatusLabels). */
  observeUpstream(operation: string, method: string, status: string, seconds: number): void;
  observeOverhead(operation: string, seconds: number): void;
  /** An answer the gateway gave itself instead of the backend's. */
  observeRejection(operation: string, reason: string, code: string): void;
  readonly upstreamUp: Gauge;
  /** Spans the trace export lost: its queue full, or a batch the collector did not take (src/tracing/). */
  readonly traceSpansDropped: Counter;
  /** Reloads of the document, by result (document-reload.ts). */
  readonly documentReloads: Counter<"result">;
  /** 1 for the document serving: its info.version and the SHA-256 of its files. */
  readonly documentInfo: Gauge<"version" | "sha256">;
}

const HTTP_LABELS = ["operation", "http_request_method", "http_response_status_code"] as const;
type HttpLabel = (typeof HTTP_LABELS)[number];

export interface MetricsOptions {
  /** prom-client's process_* and nodejs_* metrics, and the process's memory limit. */
  readonly defaultMetrics: boolean;
  /**
   * The memory limit to export as gateway_memory_limit_bytes (0: none, no series). Unset: the
   * process's own (process.constrainedMemory()) with the default metrics, none without.
   */
  readonly memoryLimitBytes?: number;
}

/**
 * gateway_document_reloads_total, on a registry: a process's own, or a cluster primary's, which
 * counts each reload once for all its workers.
 */
export function documentReloadsCounter(registry: Registry): Counter<"result"> {
  return new Counter({
    name: "gateway_document_reloads_total",
    help: "Reloads of the OpenAPI document, by result: ok (serving the new version), unchanged (the files hash as before), refused (it breaks clients or weakens security), error (it does not load, plan or build)",
    labelNames: ["result"] as const,
    registers: [registry],
  });
}

export function createMetrics(options: MetricsOptions): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics) {
    collectDefaultMetrics({ register: registry });
    // Gauges named like counters: promtool refuses them, and prom-client exports the same figures
    // by type as nodejs_active_handles, nodejs_active_requests and nodejs_active_resources.
    for (const name of SUMS_NAMED_AS_COUNTERS) registry.removeSingleMetric(name);
  }
  const registers = [registry];
  buildInfo(registry);
  const memoryLimit =
    options.memoryLimitBytes ?? (options.defaultMetrics ? memoryLimitOf(process.constrainedMemory()) : 0);
  // No limit is no series, never 0: an alert dividing by it must find nothing rather than +Inf.
  if (memoryLimit > 0) {
    new Gauge({
      name: "gateway_memory_limit_bytes",
      help: "The memory the process may use (its cgroup's limit, from process.constrainedMemory()); absent when there is none",
      // Every process of a group lives in the same container, under the same limit.
      aggregator: "first",
      registers,
    }).set(memoryLimit);
  }

  new Gauge({
    name: "gateway_file_reads_slow",
    help: `Reads of a file the gateway polls (such as the API key file) pending for more than ${SLOW_READ_MS / 1000} s, now: a hung network or FUSE mount holds them, and polls of that file are skipped until its read returns`,
    registers,
    collect() {
      this.set(slowFileReads());
    },
  });

  // prom-client refuses a histogram with exemplars on a registry that is not OpenMetrics when the
  // histogram is made; the registry goes back to Prometheus text at once, and OpenMetrics is
  // written only for a scrape that asks for it (src/open-metrics.ts, from the registry's JSON).
  const switchable = registry as unknown as Registry<RegistryContentType>;
  switchable.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  const requestDuration = new Histogram({
    name: "http_server_request_duration_seconds",
    help: "Time from the request's arrival to the end of the gateway's answer, by operation, method and status",
    labelNames: HTTP_LABELS,
    buckets: LATENCY_BUCKETS,
    // The trace id of a request whose span was exported, on its bucket (OpenMetrics scrapes only).
    enableExemplars: true,
    registers,
  });
  switchable.setContentType(Registry.PROMETHEUS_CONTENT_TYPE);
  const upstreamDuration = new Histogram({
    name: "http_client_request_duration_seconds",
    help: "Time the backend took, from sending the request to the end of its answer, by operation, method and the backend's status",
    labelNames: HTTP_LABELS,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const overhead = new Histogram({
    name: "gateway_overhead_seconds",
    help: "Time the gateway itself spent on a request the backend answered (total minus the backend's time), by operation",
    labelNames: ["operation"] as const,
    buckets: OVERHEAD_BUCKETS,
    registers,
  });
  const documentReloads = documentReloadsCounter(registry);
  const documentInfo = new Gauge({
    name: "gateway_document_info",
    help: "1 for the OpenAPI document serving, by its info.version and the first 16 hex digits of the SHA-256 of its files (of the file, for a document in one); a reload replaces the series. With workers, two series at once mean two versions serving",
    labelNames: ["version", "sha256"] as const,
    // One series per version, whatever the number of workers serving it.
    aggregator: "max",
    registers,
  });
  const rejections = new Counter({
    name: "gateway_rejections_total",
    help: "Requests the gateway answered itself instead of with the backend's answer, by operation, reason and error code",
    labelNames: ["operation", "reason", "code"] as const,
    registers,
  });

  // One map per label: a lookup builds no key string (see labelChildren).
  const requestChild = labelChildren((o) =>
    labelChildren((m) => labelChildren((s) => requestDuration.labels(o, m, s))),
  );
  const upstreamChild = labelChildren((o) =>
    labelChildren((m) => labelChildren((s) => upstreamDuration.labels(o, m, s))),
  );
  const overheadChild = labelChildren((o) => overhead.labels(o));
  const rejectionChild = labelChildren((o) =>
    labelChildren((r) => labelChildren((c) => rejections.labels(o, r, c))),
  );

  return {
    registry,
    documentReloads,
    documentInfo,
    observeRequest(operation, method, status, seconds, traceId) {
      if (traceId === undefined) {
        requestChild(operation)(methodLabel(method))(status).observe(seconds);
        return;
      }
      // A label-bound child keeps no exemplar: the labels as an object, hashed again (about 0.5 us).
      requestDuration.observe({
        labels: { operation, http_request_method: methodLabel(method), http_response_status_code: status },
        value: seconds,
        // prom-client types an exemplar's labels as the metric's own; they are not.
        exemplarLabels: { trace_id: traceId } as unknown as LabelValues<HttpLabel>,
      });
    },
    observeUpstream(operation, method, status, seconds) {
      upstreamChild(operation)(methodLabel(method))(status).observe(seconds);
    },
    observeOverhead(operation, seconds) {
      overheadChild(operation).observe(Math.max(seconds, 0));
    },
    observeRejection(operation, reason, code) {
      rejectionChild(operation)(reason)(code).inc();
    },
    traceSpansDropped: new Counter({
      name: "gateway_trace_spans_dropped_total",
      help: "Spans the gateway made and no collector got: its export queue was full, or the collector refused or never answered a batch (0 while tracing is off)",
      registers,
    }),
    upstreamUp: new Gauge({
      name: "gateway_upstream_up",
      help: "1 when the last attempt to reach the backend connected, 0 when it failed (or none was made yet): a request's, or without traffic the connect probe (at start-up and every upstream.probeIntervalMs)",
      // Over several workers: up when any worker's last attempt connected.
      aggregator: "max",
      registers,
    }),
  };
}

/**
 * gateway_build_info: which build answers, as labels of a constant 1, so a dashboard can tell two
 * versions apart during a rollout. The revision comes from the image (GIT_REVISION, a build
 * argument of the Dockerfile); a checkout run by hand says "unknown".
 */
function buildInfo(registry: Registry): void {
  const { version } = JSON.parse(readFileSync(resolve(PROJECT_ROOT, "package.json"), "utf8")) as {
    version: string;
  };
  new Gauge({
    name: "gateway_build_info",
    help: "Always 1; the labels say which build runs: the package version, the source revision (GIT_REVISION at image build, else unknown) and Node's version",
    labelNames: ["version", "revision", "node_version"] as const,
    // The same in every worker: summed, it would count the workers.
    aggregator: "first",
    registers: [registry],
  }).set({ version, revision: process.env.GIT_REVISION || "unknown", node_version: process.version }, 1);
}

/**
 * A limit from process.constrainedMemory(), or 0 for none. Without one, Node reports 0, or libuv's
 * "unlimited" (2^64 - 1, or cgroup v1's 2^63 rounded to a page) where the cgroup says max: no
 * real limit is above 2^53 bytes.
 */
export function memoryLimitOf(constrained: number): number {
  return constrained > 0 && constrained <= Number.MAX_SAFE_INTEGER ? constrained : 0;
}

/**
 * The label child of each label value, looked up once and reused: prom-client hashes the label
 * values on every labels() call, a cost paid on every request of a busy gateway. For
 * several labels, nest it, one map per label, so that a lookup builds no key string:
 * `labelChildren((a) => labelChildren((b) => counter.labels(a, b)))`, then `child(a)(b).inc()`.
 * Label values come from bounded sets (see above), so the maps stay small.
 */
export function labelChildren<V extends string, T>(make: (value: V) => T): (value: V) => T {
  const children = new Map<V, T>();
  return (value) => {
    let child = children.get(value);
    if (child === undefined) {
      child = make(value);
      children.set(value, child);
    }
    return child;
  };
}

/** The method as a label value: OpenTelemetry's known methods by name, anything else _OTHER. */
function methodLabel(method: string): string {
  return KNOWN_METHODS.has(method) ? method : "_OTHER";
}

const STATUS_LABELS = new Map<number, string>();
/**
 * A status as its label, by number: for an answer the gateway gave itself (its catalogue's
 * statuses, a policy's own reply), whose statuses the code bounds.
 */
export function statusLabel(status: number): string {
  let label = STATUS_LABELS.get(status);
  if (label === undefined) {
    label = String(status);
    STATUS_LABELS.set(status, label);
  }
  return label;
}

/** The label of a status the backend gave, for the operation it answered (undefined: none matched). */
export type StatusLabels = (operation: Operation | undefined, status: number) => string;

// 1xx to 9xx: Node's client takes any three-digit status from a backend.
const CLASS_LABELS = Array.from({ length: 10 }, (_, digit) => `${digit}xx`);
const DECLARED_STATUS = /^[1-5][0-9][0-9]$/;

/**
 * A backend may answer with any of 900 statuses, and each would be a new series for every
 * operation and method (and one per bucket): one backend answering 400 statuses added 12,769.
 * So a backend's status is labelled by its number only when the operation declares it (a
 * numeric key of its responses: "404", not "4XX" or "default") or the gateway itself answers
 * with it (`gatewayStatuses`: the error catalogue's), and otherwise by its class, `2xx` to `5xx`,
 * which an alert's `=~"5.."` still matches.
 */
export function createStatusLabels(
  operations: readonly Operation[],
  gatewayStatuses: Iterable<number>,
): StatusLabels {
  const gateway = new Set(gatewayStatuses);
  const known = new Map<Operation, ReadonlySet<number>>();
  for (const operation of operations) {
    const statuses = new Set(gateway);
    for (const key of operation.responses.keys()) if (DECLARED_STATUS.test(key)) statuses.add(Number(key));
    known.set(operation, statuses);
  }
  return (operation, status) => {
    const statuses = (operation && known.get(operation)) ?? gateway;
    return statuses.has(status)
      ? statusLabel(status)
      : (CLASS_LABELS[Math.trunc(status / 100) % 10] as string);
  };
}

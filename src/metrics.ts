// The prom-client registry and every instrument of the gateway. Seconds, not milliseconds;
// every label value comes from a bounded set (operationIds, catalogue codes, consumers).
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** The operation label of a request the description does not know: one value, never the raw path. */
export const UNMATCHED = "unmatched";

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
// The gateway's own share is micro- to milliseconds: prom-client's defaults start at 5 ms.
const OVERHEAD_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1];

export interface Metrics {
  readonly registry: Registry;
  observeRequest(operation: string, method: string, status: number, seconds: number): void;
  observeUpstream(operation: string, method: string, status: number, seconds: number): void;
  observeOverhead(operation: string, seconds: number): void;
  readonly rejections: Counter<"operation" | "reason" | "code">;
  readonly upstreamErrorAnswers: Counter<"operation" | "status_code">;
  readonly limitAdjustments: Counter<"operation" | "parameter" | "adjustment">;
  readonly contractViolations: Counter<"operation" | "rule" | "mode">;
  readonly deprecatedCalls: Counter<"operation" | "consumer">;
  readonly unstableCalls: Counter<"operation" | "stability" | "consumer">;
  readonly apiKeys: Gauge;
  readonly apiKeyReloads: Counter<"result">;
  readonly upstreamUp: Gauge;
}

export function createMetrics(options: { readonly defaultMetrics: boolean }): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const requestDuration = new Histogram({
    name: "http_server_request_duration_seconds",
    help: "Time from the request's arrival to the end of the gateway's answer, by operation, method and status",
    labelNames: ["operation", "method", "status_code"] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const upstreamDuration = new Histogram({
    name: "http_client_request_duration_seconds",
    help: "Time the backend took, from sending the request to the end of its answer, by operation, method and status",
    labelNames: ["operation", "method", "status_code"] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const overhead = new Histogram({
    name: "gateway_overhead_seconds",
    help: "Time the gateway itself spent on a proxied request (total minus the backend's time), by operation",
    labelNames: ["operation"] as const,
    buckets: OVERHEAD_BUCKETS,
    registers,
  });

  // Label children are looked up once per (operation, method, status) and reused: hashing label
  // values on every request is measurable at tens of thousands of requests per second.
  const childCache = <T>(make: (key: string[]) => T) => {
    const cache = new Map<string, T>();
    return (...key: string[]): T => {
      const id = key.join("\u0000");
      let child = cache.get(id);
      if (child === undefined) {
        child = make(key);
        cache.set(id, child);
      }
      return child;
    };
  };
  const requestChild = childCache(([o, m, s]) =>
    requestDuration.labels(o as string, m as string, s as string),
  );
  const upstreamChild = childCache(([o, m, s]) =>
    upstreamDuration.labels(o as string, m as string, s as string),
  );
  const overheadChild = childCache(([o]) => overhead.labels(o as string));

  return {
    registry,
    observeRequest(operation, method, status, seconds) {
      requestChild(operation, method, statusLabel(status)).observe(seconds);
    },
    observeUpstream(operation, method, status, seconds) {
      upstreamChild(operation, method, statusLabel(status)).observe(seconds);
    },
    observeOverhead(operation, seconds) {
      overheadChild(operation).observe(Math.max(seconds, 0));
    },
    rejections: new Counter({
      name: "gateway_rejections_total",
      help: "Requests the gateway answered itself instead of with the backend's answer, by operation, reason and error code",
      labelNames: ["operation", "reason", "code"] as const,
      registers,
    }),
    upstreamErrorAnswers: new Counter({
      name: "gateway_upstream_error_responses_total",
      help: "Backend answers with status 5xx or 429, passed through to the client, by operation and status",
      labelNames: ["operation", "status_code"] as const,
      registers,
    }),
    limitAdjustments: new Counter({
      name: "gateway_limit_adjustments_total",
      help: "Query parameters the gateway defaulted or clamped before the backend saw them (not rejections)",
      labelNames: ["operation", "parameter", "adjustment"] as const,
      registers,
    }),
    contractViolations: new Counter({
      name: "gateway_contract_violations_total",
      help: "Backend answers that broke the interface contract, by operation, rule or schema keyword, and mode",
      labelNames: ["operation", "rule", "mode"] as const,
      registers,
    }),
    deprecatedCalls: new Counter({
      name: "gateway_deprecated_calls_total",
      help: "Authenticated calls to deprecated operations, by operation and consumer",
      labelNames: ["operation", "consumer"] as const,
      registers,
    }),
    unstableCalls: new Counter({
      name: "gateway_unstable_operation_calls_total",
      help: "Authenticated calls to operations marked experimental or beta, by operation, stability and consumer",
      labelNames: ["operation", "stability", "consumer"] as const,
      registers,
    }),
    apiKeys: new Gauge({ name: "gateway_api_keys", help: "API keys currently loaded", registers }),
    apiKeyReloads: new Counter({
      name: "gateway_api_key_reloads_total",
      help: "Reloads of the API key file, by result (ok, error)",
      labelNames: ["result"] as const,
      registers,
    }),
    upstreamUp: new Gauge({
      name: "gateway_upstream_up",
      help: "1 when the last attempt to reach the backend connected, 0 when it failed to connect",
      registers,
    }),
  };
}

const STATUS_LABELS = new Map<number, string>();
function statusLabel(status: number): string {
  let label = STATUS_LABELS.get(status);
  if (label === undefined) {
    label = String(status);
    STATUS_LABELS.set(status, label);
  }
  return label;
}

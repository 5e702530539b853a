import assert from "node:assert/strict";
import { test } from "node:test";
import policies from "../../policies/index.ts";
import { createMetrics } from "../../src/metrics.ts";

const names = (metrics: { name: string }[]) => metrics.map((metric) => metric.name).sort();

test("the core registers the HTTP histograms, rejections, overhead and upstream-up, and no policy's", () => {
  const { registry } = createMetrics({ defaultMetrics: false });
  assert.deepEqual(names(registry.getMetricsAsArray()), [
    "gateway_overhead_seconds",
    "gateway_rejections_total",
    "gateway_upstream_up",
    "http_client_request_duration_seconds",
    "http_server_request_duration_seconds",
  ]);
});

test("each policy registers its own instruments on the registry it is given, each name once", () => {
  const { registry } = createMetrics({ defaultMetrics: false });
  const owners = new Map<string, string>();
  for (const policy of policies) {
    const before = new Set(names(registry.getMetricsAsArray()));
    policy.metrics?.(registry);
    for (const name of names(registry.getMetricsAsArray())) {
      if (!before.has(name)) owners.set(name, policy.name);
    }
  }
  assert.deepEqual(Object.fromEntries([...owners].sort()), {
    gateway_api_key_reloads_total: "auth",
    gateway_api_keys: "auth",
    gateway_contract_violations_total: "responseContract",
    gateway_deprecated_calls_total: "lifecycle",
    gateway_limit_adjustments_total: "limit",
    gateway_unstable_operation_calls_total: "lifecycle",
  });
});

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";
import { AggregatorRegistry, register } from "prom-client";
import policies from "../../policies/index.ts";
import { createMetrics, createStatusLabels, memoryLimitOf } from "../../src/metrics.ts";
import type { Operation } from "../../src/openapi.ts";

const names = (metrics: { name: string }[]) => metrics.map((metric) => metric.name).sort();

test("the core registers the HTTP histograms, rejections, overhead, upstream-up, dropped spans and the document's, and no policy's", () => {
  const { registry } = createMetrics({ defaultMetrics: false });
  assert.deepEqual(names(registry.getMetricsAsArray()), [
    "gateway_build_info",
    "gateway_document_info",
    "gateway_document_reloads_total",
    "gateway_file_reads_slow",
    "gateway_overhead_seconds",
    "gateway_rejections_total",
    "gateway_trace_spans_dropped_total",
    "gateway_upstream_up",
    "http_client_request_duration_seconds",
    "http_server_request_duration_seconds",
  ]);
});

test("each policy registers its own instruments on the registry it is given, each name once", () => {
  const { registry } = createMetrics({ defaultMetrics: false });
  const globalBefore = names(register.getMetricsAsArray());
  const owners = new Map<string, string>();
  for (const policy of policies) {
    if (policy.metrics === undefined) continue;
    const before = new Set(names(registry.getMetricsAsArray()));
    // prom-client throws on a name registered twice: no two policies may own one.
    policy.metrics(registry);
    const added = names(registry.getMetricsAsArray()).filter((name) => !before.has(name));
    assert.ok(added.length > 0, `${policy.name} declares metrics() and registers nothing`);
    for (const name of added) {
      assert.match(name, /^gateway_[a-z_]+$/, `${policy.name}'s ${name}`);
      owners.set(name, policy.name);
    }
  }
  assert.ok(owners.size > 0);
  // Nothing on prom-client's global registry: every instrument is on the gateway's own.
  assert.deepEqual(names(register.getMetricsAsArray()), globalBefore);
});

test("gateway_build_info is 1, labelled with the package version, the revision and Node's version", async () => {
  const { version } = createRequire(import.meta.url)("../../package.json") as { version: string };
  const { registry } = createMetrics({ defaultMetrics: false });
  const [info] = (await registry.getMetricsAsJSON()).filter((metric) => metric.name === "gateway_build_info");
  assert.deepEqual(info?.values, [
    {
      value: 1,
      labels: { version, revision: process.env.GIT_REVISION || "unknown", node_version: process.version },
    },
  ]);
});

test("gateway_memory_limit_bytes is the limit when there is one, and absent (not 0) without", async () => {
  const limited = createMetrics({ defaultMetrics: false, memoryLimitBytes: 402_653_184 }).registry;
  assert.match(await limited.metrics(), /^gateway_memory_limit_bytes 402653184$/m);
  const unlimited = createMetrics({ defaultMetrics: false, memoryLimitBytes: 0 }).registry;
  assert.doesNotMatch(await unlimited.metrics(), /gateway_memory_limit_bytes/);
});

test("Node's answers for no memory limit (0, libuv's 2^64 - 1, cgroup v1's near 2^63) read as none", () => {
  assert.equal(memoryLimitOf(0), 0);
  assert.equal(memoryLimitOf(2 ** 64 - 1), 0);
  assert.equal(memoryLimitOf(2 ** 63 - 4096), 0);
  assert.equal(memoryLimitOf(536_870_912), 536_870_912);
});

test("across workers the build info and the memory limit stay one process's figure, not a sum", async () => {
  const worker = () =>
    createMetrics({ defaultMetrics: false, memoryLimitBytes: 1000 }).registry.getMetricsAsJSON();
  const merged = await AggregatorRegistry.aggregate([await worker(), await worker()]).metrics();
  assert.match(merged, /^gateway_build_info\{[^}]*\} 1$/m);
  assert.match(merged, /^gateway_memory_limit_bytes 1000$/m);
});

test("a backend's status is a label by number only where the operation declares it or the gateway answers it", () => {
  const responses = new Map(["200", "404", "4XX", "default"].map((status) => [status, {}]));
  const getPet = { id: "getPet", responses } as unknown as Operation;
  const label = createStatusLabels([getPet], [401, 503]);
  assert.deepEqual(
    [200, 404, 401, 503, 418, 409, 302, 599, 999].map((status) => label(getPet, status)),
    ["200", "404", "401", "503", "4xx", "4xx", "3xx", "5xx", "9xx"],
  );
  // No operation matched: only the gateway's own statuses by number.
  assert.deepEqual(
    [200, 401].map((status) => label(undefined, status)),
    ["2xx", "401"],
  );
});

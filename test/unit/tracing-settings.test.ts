// The OTEL_* variables the gateway honours (src/tracing/settings.ts).
import assert from "node:assert/strict";
import { test } from "node:test";
import { tracingSettings } from "../../src/tracing/settings.ts";

const ENDPOINT = "http://collector:4318";

test("tracing is off unless an endpoint is set, and off when disabled or its exporter is none", () => {
  assert.equal(tracingSettings({}), undefined);
  assert.equal(
    tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_SDK_DISABLED: "true" }),
    undefined,
  );
  assert.equal(
    tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: "none" }),
    undefined,
  );
});

test("the base endpoint gets /v1/traces, the traces endpoint is used as it is", () => {
  assert.equal(
    tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: `${ENDPOINT}/` })?.url,
    `${ENDPOINT}/v1/traces`,
  );
  assert.equal(
    tracingSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${ENDPOINT}/t`,
    })?.url,
    `${ENDPOINT}/t`,
  );
});

test("protobuf is the default protocol, JSON is chosen by name, gRPC is refused with what to use", () => {
  assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT })?.protocol, "http/protobuf");
  assert.equal(
    tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })
      ?.protocol,
    "http/json",
  );
  assert.throws(
    () => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }),
    (error: Error & { code?: string }) =>
      error.code === "GATEWAY_CONFIG_INVALID" && /grpc.*not supported.*http\/protobuf/.test(error.message),
  );
});

test("a collector credential that is not validly encoded is refused without being repeated", () => {
  assert.throws(
    () =>
      tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS: "x-key=s3cr%zz" }),
    (error: Error) => !error.message.includes("s3cr"),
  );
});

test("the sampler is parent-based always-on by default, and a parent-based ratio by name", () => {
  assert.deepEqual(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT })?.sampler, {
    kind: "parentbased",
    root: { kind: "always_on" },
  });
  assert.deepEqual(
    tracingSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.01",
    })?.sampler,
    { kind: "parentbased", root: { kind: "traceidratio", ratio: 0.01 } },
  );
  assert.throws(() =>
    tracingSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
      OTEL_TRACES_SAMPLER: "traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "2",
    }),
  );
});

test("the batch processor's shape comes from OTEL_BSP_* where set, else the gateway's defaults", () => {
  const defaults = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT });
  assert.ok(defaults);
  assert.deepEqual(defaults.batch, {
    maxQueueSize: 2048,
    maxExportBatchSize: 256,
    scheduledDelayMillis: 1000,
    exportTimeoutMillis: 10_000,
  });
  const set = tracingSettings({
    OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
    OTEL_BSP_MAX_QUEUE_SIZE: "4096",
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "1024",
    OTEL_BSP_SCHEDULE_DELAY: "5000",
    OTEL_BSP_EXPORT_TIMEOUT: "30000",
  });
  assert.ok(set);
  assert.deepEqual(set.batch, {
    maxQueueSize: 4096,
    maxExportBatchSize: 1024,
    scheduledDelayMillis: 5000,
    exportTimeoutMillis: 30_000,
  });
  // A queue smaller than the default batch: the batch is the whole queue.
  const small = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_BSP_MAX_QUEUE_SIZE: "100" });
  assert.ok(small);
  assert.equal(small.batch.maxExportBatchSize, 100);
});

test("an OTEL_BSP_* value that is not a whole number above 0, or a batch above the queue, is refused by name", () => {
  for (const [name, text] of [
    ["OTEL_BSP_MAX_QUEUE_SIZE", "0"],
    ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "-5"],
    ["OTEL_BSP_SCHEDULE_DELAY", "1.5"],
    ["OTEL_BSP_EXPORT_TIMEOUT", "soon"],
  ] as const) {
    assert.throws(
      () => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, [name]: text }),
      (error: Error & { code?: string }) =>
        error.code === "GATEWAY_CONFIG_INVALID" && error.message.startsWith(`${name}: "${text}"`),
    );
  }
  assert.throws(
    () =>
      tracingSettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
        OTEL_BSP_MAX_QUEUE_SIZE: "64",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "128",
      }),
    /OTEL_BSP_MAX_EXPORT_BATCH_SIZE must not exceed OTEL_BSP_MAX_QUEUE_SIZE/,
  );
});

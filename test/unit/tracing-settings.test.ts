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

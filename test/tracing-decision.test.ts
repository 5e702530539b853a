// Spans over OTLP from a gateway in decision mode to a real receiver: each decision is one server
// span, the child of the traceparent its call carried (the client's, passed on by nginx's
// auth_request, or Envoy's own span), described by the original request the proxy reported, and a
// leaf: the backend's traceparent stays the client's. Calls are made as the proxies make them
// (nginx's generated config's headers; Envoy's through the harness acting on its generated config).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, afterEach, before, describe, test } from "node:test";
import policies from "../policies/index.ts";
import { validateConfig } from "../src/config.ts";
import { CARRIED_ANSWER_HEADER } from "../src/decision/carried-answer.ts";
import { envoyConfig } from "../src/decision/envoy-config.ts";
import { contractOf } from "../src/decision/proxy-config.ts";
import { isListedAttribute, SERVER_SPAN_ATTRIBUTES } from "../src/tracing/attributes.ts";
import { type TracingSettings, tracingSettings } from "../src/tracing/settings.ts";
import { contractAnswer } from "./fixtures/contract-answer.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./fixtures/otlp-receiver.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { type EnvoyHarness, startEnvoyHarness } from "./support/envoy-harness.ts";
import { eventually } from "./support/eventually.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { type RequestOptions, request } from "./support/http.ts";
import { type KeysFile, writeKeysFile } from "./support/keys.ts";
import { sampleValue, scrape } from "./support/metrics.ts";
import { assertNoSecrets, spanTexts } from "./support/secrets.ts";

const SERVER = 2;
const CLIENT_SPAN = "00f067aa0ba902b7";
const newTrace = () => randomBytes(16).toString("hex");
const traceparentOf = (trace: string, span = CLIENT_SPAN) => `00-${trace}-${span}-01`;

describe("spans of a gateway in decision mode", { concurrency: 1 }, () => {
  let keys: KeysFile;
  let receiver: OtlpReceiver;
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let envoy: EnvoyHarness;

  /** What nginx's auth_request subrequest sends: the client's headers and the generated config's. */
  const nginxCall = (uri: string, headers: Record<string, string> = {}) =>
    request(`${gw.origin}/decide/nginx`, {
      headers: {
        "x-original-method": "GET",
        "x-original-uri": uri,
        "x-forwarded-for": "203.0.113.9",
        ...headers,
      },
    });
  const spansOf = (trace: string, count = 1) =>
    eventually(`${count} span(s) of trace ${trace}`, () => {
      const found = receiver.spans.filter((span) => span.traceId === trace);
      return found.length >= count && found;
    });
  /** A decision whose span arrives after every span of the calls made before it. */
  const flushed = async () => {
    const trace = newTrace();
    assert.equal(
      (
        await nginxCall("/v1/pets", {
          authorization: `Bearer ${keys.key}`,
          traceparent: traceparentOf(trace),
        })
      ).status,
      200,
    );
    await spansOf(trace);
  };

  before(async () => {
    keys = writeKeysFile(["alice"]);
    receiver = await startOtlpReceiver();
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    const config = {
      mode: "decision",
      // The proxies are this test (and the Envoy harness) at 127.0.0.1.
      server: { trustedProxies: ["127.0.0.1"] },
      policies: { auth: { keysFile: keys.file } },
    };
    gw = await startGateway({
      upstreamUrl: "",
      config,
      tracing: tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }) as TracingSettings,
    });
    const contract = await contractOf(validateConfig({ port: 0, opsPort: 0, ...config }, policies), policies);
    envoy = await startEnvoyHarness(
      envoyConfig(contract, {
        decisionUrl: gw.origin,
        upstreamUrl: backend.url,
        listenPort: 0,
        timeoutMs: 1000,
      }),
    );
  });
  after(async () => {
    await envoy?.close();
    await gw?.close();
    await backend?.close();
    await receiver?.close();
  });
  afterEach(() => {
    assert.deepEqual(receiver.failures, [], "every export decoded");
  });

  // Side by side: each waits on the export of its own trace.
  describe("each decision", { concurrency: true }, () => {
    test("a decision through nginx is one server span, the child of the client's traceparent, described by the original request", async () => {
      const trace = newTrace();
      const answer = await nginxCall("/v1/pets?limit=1000", {
        authorization: `Bearer ${keys.key}`,
        traceparent: traceparentOf(trace),
        tracestate: "rojo=1",
      });
      assert.equal(answer.status, 200);
      // The allow answer gives nginx no traceparent: the backend gets the client's own.
      assert.equal(answer.headers.traceparent, undefined);
      assert.equal(answer.headers[`x-gateway-upstream-traceparent`], undefined);
      const [span, ...others] = await spansOf(trace);
      assert.ok(span);
      await flushed();
      assert.deepEqual(others, []);
      assert.equal(receiver.spans.filter((s) => s.traceId === trace).length, 1, "no client span");
      assert.equal(span.kind, SERVER);
      assert.equal(span.parentSpanId, CLIENT_SPAN);
      assert.equal(span.traceState, "rojo=1");
      assert.equal(span.name, "GET /v1/pets");
      assert.deepEqual(
        pick(span, [
          "http.request.method",
          "http.route",
          "url.path",
          "url.query",
          "http.response.status_code",
          "client.address",
          "gateway.operation_id",
          "gateway.consumer",
          "gateway.decidedFor",
          "gateway.decision",
          "gateway.note.limitAdjusted",
        ]),
        {
          "http.request.method": "GET",
          "http.route": "/v1/pets",
          // The original request's path, not the door's.
          "url.path": "/v1/pets",
          "url.query": "limit=1000",
          "http.response.status_code": 200,
          "client.address": "203.0.113.9",
          "gateway.operation_id": "listPets",
          "gateway.consumer": "alice",
          "gateway.decidedFor": "nginx",
          "gateway.decision": "allow",
          "gateway.note.limitAdjusted": "clamped_to_maximum",
        },
      );
      // The decision's access line names the decision's span.
      const line = gw.logs.lines.find(
        (l) => l.msg === "request" && l.reqId === answer.headers["x-request-id"],
      );
      assert.equal(line?.trace_id, trace);
      assert.equal(line?.span_id, span.spanId);
    });

    test("a refusal through nginx: its span has the status the client sees, not the 403 carrying it, and the render endpoint makes none", async () => {
      const trace = newTrace();
      const traceparent = traceparentOf(trace);
      const refused = await nginxCall("/v1/pets/1", { authorization: `Bearer ${keys.key}x`, traceparent });
      assert.equal(refused.status, 403);
      // nginx's @deny location: even a call that carried a traceparent makes no span of its own.
      const rendered = await request(`${gw.origin}/decide/nginx/deny`, {
        headers: { [CARRIED_ANSWER_HEADER]: refused.headers[CARRIED_ANSWER_HEADER] as string, traceparent },
      });
      assert.equal(rendered.status, 401);
      const [span] = await spansOf(trace);
      await flushed();
      assert.equal(receiver.spans.filter((s) => s.traceId === trace).length, 1, "one span: the decision's");
      assert.ok(!receiver.spans.some((s) => String(s.attributes["url.path"]).startsWith("/decide/")));
      assert.ok(span);
      assert.equal(span.name, "GET /v1/pets/{petId}");
      assert.deepEqual(
        pick(span, [
          "http.response.status_code",
          "gateway.refusal.code",
          "gateway.refusal.reason",
          "gateway.decidedFor",
          "gateway.decision",
          "gateway.consumer",
        ]),
        {
          "http.response.status_code": 401,
          "gateway.refusal.code": "INVALID_API_KEY",
          "gateway.refusal.reason": "auth",
          "gateway.decidedFor": "nginx",
        },
      );
      // A 4xx is the client's: not an error of the gateway's span.
      assert.notEqual(span.statusCode, 2);
      // Neither the key nor the wrong key it was sent as reached the collector.
      assertNoSecrets(
        [...keys.keys, { consumer: "wrong", key: `${keys.key}x` }],
        spanTexts(receiver),
        "spans",
      );
    });

    test("through Envoy, the decision's span and the backend's call are both children of the client's span", async () => {
      const trace = newTrace();
      const traceparent = traceparentOf(trace);
      const answer = await request(`${envoy.origin}/v1/pets/1`, {
        key: keys.key,
        headers: { traceparent, tracestate: "rojo=1" },
      });
      assert.equal(answer.status, 200);
      // The backend got the client's trace context as it was: the decision rewrote nothing.
      const received = backend.requests.at(-1)?.headers;
      assert.equal(received?.traceparent, traceparent);
      assert.equal(received?.tracestate, "rojo=1");
      const [span] = await spansOf(trace);
      assert.ok(span);
      assert.equal(span.parentSpanId, CLIENT_SPAN);
      assert.equal(span.traceState, "rojo=1");
      assert.equal(span.name, "GET /v1/pets/{petId}");
      assert.equal(span.attributes["url.path"], "/v1/pets/1");
      assert.equal(span.attributes["gateway.decidedFor"], "envoy");
      assert.equal(span.attributes["gateway.decision"], "allow");
      // getPet in the bundled document: deprecated, sunset 2030-12-05.
      assert.equal(span.attributes["gateway.deprecated"], true);
      assert.equal(typeof span.attributes["gateway.note.daysToSunset"], "number");
    });

    test("Envoy tracing its ext_authz call: the decision is the child of Envoy's span, a refusal of the body included", async () => {
      const trace = newTrace();
      const envoySpan = randomBytes(8).toString("hex");
      // As Envoy's HTTP ext_authz client calls: path_prefix + the original path, the body, its span's traceparent.
      const options: RequestOptions = {
        method: "POST",
        key: keys.key,
        headers: { "x-forwarded-for": "203.0.113.9", traceparent: traceparentOf(trace, envoySpan) },
        body: '{"name":"Rex"}',
      };
      const answer = await request(`${gw.origin}/decide/envoy/v1/pets`, options);
      assert.equal(answer.status, 400);
      const [span] = await spansOf(trace);
      assert.ok(span);
      assert.equal(span.parentSpanId, envoySpan);
      assert.equal(span.name, "POST /v1/pets");
      assert.equal(span.attributes["http.response.status_code"], 400);
      assert.equal(span.attributes["gateway.refusal.code"], "INVALID_BODY");
      assert.equal(span.attributes["gateway.decidedFor"], "envoy");
    });

    test("a decision call without a valid traceparent starts a trace of its own", async () => {
      const calls = [{}, { traceparent: `00-${"0".repeat(32)}-${CLIENT_SPAN}-01` }].map(async (headers) => {
        const answer = await nginxCall("/v1/pets", { authorization: `Bearer ${keys.key}`, ...headers });
        assert.equal(answer.status, 200);
        const line = gw.logs.lines.find(
          (l) => l.msg === "request" && l.reqId === answer.headers["x-request-id"],
        );
        const trace = line?.trace_id as string;
        assert.match(trace, /^[0-9a-f]{32}$/);
        assert.notEqual(trace, "0".repeat(32));
        const [span] = await spansOf(trace);
        assert.equal(span?.parentSpanId, "");
        assert.equal(span?.spanId, line?.span_id);
      });
      await Promise.all(calls);
    });
  });

  test("every attribute a decision's span carried is one the reference lists, and nothing was dropped", async () => {
    assert.ok(receiver.spans.length >= 6, `${receiver.spans.length} spans`);
    for (const span of receiver.spans) {
      assert.equal(span.kind, SERVER, "a decision makes no client span");
      for (const name of Object.keys(span.attributes))
        assert.ok(isListedAttribute(name, SERVER_SPAN_ATTRIBUTES), name);
    }
    assert.equal(sampleValue(await scrape(gw), "gateway_trace_spans_dropped_total"), 0);
  });
});

function pick(span: ReceivedSpan, names: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const name of names) if (span.attributes[name] !== undefined) picked[name] = span.attributes[name];
  return picked;
}

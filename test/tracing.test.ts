// Spans over OTLP from a real gateway to a real receiver: a client's traceparent comes back as one
// trace (the client's span -> the gateway's server span -> its client span -> the backend), with
// the attributes docs/tracing.md lists and no key anywhere in what the collector got. Both
// encodings the gateway offers, each decoded as a collector does (test/fixtures/otlp-receiver.ts),
// and a gateway in decision mode, whose span per decision joins the trace of the proxy's call.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, afterEach, before, describe, test } from "node:test";
import { CARRIED_ANSWER_HEADER } from "../src/decision/carried-answer.ts";
import { envoyConfig } from "../src/decision/envoy-config.ts";
import {
  CLIENT_SPAN_ATTRIBUTES,
  isListedAttribute,
  RESOURCE_ATTRIBUTES,
  SERVER_SPAN_ATTRIBUTES,
} from "../src/tracing/attributes.ts";
import { type OtlpProtocol, tracingSettings } from "../src/tracing/settings.ts";
import { contractAnswer } from "./fixtures/contract-answer.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./fixtures/otlp-receiver.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { type EnvoyHarness, startEnvoyHarness } from "./support/envoy-harness.ts";
import { eventually } from "./support/eventually.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { type RequestOptions, request } from "./support/http.ts";
import { type KeysFile, writeKeysFile } from "./support/keys.ts";
import { parsePrometheus, sampleValue, scrape } from "./support/metrics.ts";
import { assertNoSecrets, spanTexts } from "./support/secrets.ts";
import { startTracedDecision, TEST_SCHEDULE_DELAY, type TracedDecision } from "./support/tracing.ts";

const { file: keysFile, keyOf } = writeKeysFile(["acme"]);
const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";
const SERVER = 2;
/** What Prometheus 2.x sends when it scrapes. */
const PROMETHEUS_ACCEPT =
  "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
const CLIENT = 3;
const newTrace = () => randomBytes(16).toString("hex");
const traceparentOf = (trace: string, span = CLIENT_SPAN) => `00-${trace}-${span}-01`;

// The three suites wait on their exports side by side.
describe("spans exported over OTLP/HTTP", { concurrency: 3 }, () => {
  for (const protocol of ["http/protobuf", "http/json"] as const) exportSuite(protocol);
  decisionSuite();
});

function exportSuite(protocol: OtlpProtocol) {
  // One test after another within a suite: they read the receiver and the log in turn.
  describe(`in ${protocol}`, { concurrency: 1 }, () => {
    let receiver: OtlpReceiver;
    let backend: ProgrammableBackend;
    let gw: TestGateway;
    before(async () => {
      receiver = await startOtlpReceiver();
      backend = await startProgrammableBackend();
      backend.behave(contractAnswer);
      const tracing = tracingSettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20collector-secret",
        OTEL_SERVICE_NAME: "gateway-under-test",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test",
        ...TEST_SCHEDULE_DELAY,
      });
      assert.ok(tracing);
      gw = await startGateway({
        upstreamUrl: backend.url,
        config: { policies: { auth: { keysFile } } },
        tracing,
      });
    });
    after(async () => {
      await gw.close();
      await backend.close();
      await receiver.close();
    });
    afterEach(() => {
      assert.deepEqual(receiver.failures, [], "every export decoded");
    });

    test("a client's traceparent comes back as one trace through the gateway to the backend", async () => {
      const answer = await request(`${gw.url}/pets?limit=5`, {
        key: keyOf("acme"),
        headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: "rojo=1" },
      });
      assert.equal(answer.status, 200);
      const spans = await eventually("both spans exported", () => {
        const found = receiver.spans.filter((span) => span.traceId === CLIENT_TRACE);
        return found.length >= 2 && found;
      });
      const server = spans.find((span) => span.kind === SERVER);
      const client = spans.find((span) => span.kind === CLIENT);
      assert.ok(server && client);
      assert.equal(spans.length, 2);
      assert.equal(server.protocol, protocol);
      assert.equal(server.traceState, "rojo=1");
      assert.equal(server.parentSpanId, CLIENT_SPAN);
      assert.equal(client.parentSpanId, server.spanId);
      const received = backend.requests.at(-1)?.headers;
      assert.equal(received?.traceparent, `00-${CLIENT_TRACE}-${client.spanId}-01`);
      assert.equal(received?.tracestate, "rojo=1");
      assert.equal(server.name, "GET /v1/pets");
      assert.equal(server.attributes["http.request.method"], "GET");
      assert.equal(server.attributes["http.route"], "/v1/pets");
      assert.equal(server.attributes["url.path"], "/v1/pets");
      assert.equal(server.attributes["url.query"], "limit=5");
      assert.equal(server.attributes["http.response.status_code"], 200);
      assert.equal(server.attributes["client.address"], "127.0.0.1");
      assert.equal(server.attributes["server.address"], "127.0.0.1");
      assert.equal(server.attributes["gateway.operation_id"], "listPets");
      assert.equal(server.attributes["gateway.consumer"], "acme");
      assert.equal(client.attributes["http.response.status_code"], 200);
      assert.equal(server.resource["service.name"], "gateway-under-test");
      assert.equal(server.resource["deployment.environment"], "test");
      // The access line names the gateway's server span.
      const line = gw.logs.messages("request").at(-1);
      assert.equal(line?.trace_id, CLIENT_TRACE);
      assert.equal(line?.span_id, server.spanId);
      // The collector's credential went to the collector, as a header.
      assert.equal(receiver.headers.at(-1)?.authorization, "Bearer collector-secret");
    });

    test("a refused request is a server span with its refusal code, and no client span", async () => {
      const key = keyOf("acme");
      const answer = await request(`${gw.url}/pets?api_key=${key}`, { key: `${key}x` });
      assert.equal(answer.status, 401);
      const line = gw.logs.messages("request").at(-1);
      const traceId = line?.trace_id as string;
      assert.match(traceId, /^[0-9a-f]{32}$/);
      const server = await eventually("the refused request's span", () =>
        receiver.spans.find((span) => span.traceId === traceId),
      );
      assert.equal(server.kind, SERVER);
      assert.equal(typeof server.attributes["gateway.refusal.code"], "string");
      assert.equal(server.attributes["http.response.status_code"], 401);
      // A 4xx is the client's: not an error of the gateway's span.
      assert.notEqual(server.statusCode, 2);
      assert.equal(receiver.spans.filter((span) => span.traceId === traceId).length, 1);
      // No key in anything the collector got, query and Authorization alike.
      for (const body of receiver.bodies) {
        assert.ok(!body.toString("utf8").includes(key), "a key reached the collector");
      }
    });

    test("a request without a traceparent starts a trace of its own, sent on to the backend", async () => {
      assert.equal((await request(`${gw.url}/pets`, { key: keyOf("acme") })).status, 200);
      const traceparent = backend.requests.at(-1)?.headers.traceparent as string;
      assert.match(traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    });

    test("a client's unsampled trace goes on to the backend unsampled, and no span of it is exported", async () => {
      const unsampled = randomBytes(16).toString("hex");
      const answer = await request(`${gw.url}/pets`, {
        key: keyOf("acme"),
        headers: { traceparent: `00-${unsampled}-${CLIENT_SPAN}-00` },
      });
      assert.equal(answer.status, 200);
      // The backend's parent is a span of the gateway's own, in the client's trace, still unsampled.
      const traceparent = backend.requests.at(-1)?.headers.traceparent as string;
      const [, trace, parent] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-00$/.exec(traceparent) ?? [];
      assert.equal(trace, unsampled, traceparent);
      assert.notEqual(parent, CLIENT_SPAN);
      const line = gw.logs.messages("request").at(-1);
      assert.equal(line?.trace_id, unsampled);
      assert.notEqual(line?.span_id, parent);
      // A sampled request sent after it is exported; by then the unsampled one would have been too.
      const sampled = randomBytes(16).toString("hex");
      await request(`${gw.url}/pets`, {
        key: keyOf("acme"),
        headers: { traceparent: `00-${sampled}-${CLIENT_SPAN}-01` },
      });
      await eventually("the sampled request's spans", () =>
        receiver.spans.some((span) => span.traceId === sampled && span.kind === SERVER),
      );
      assert.equal(receiver.spans.filter((span) => span.traceId === unsampled).length, 0);
    });

    test("a deprecated operation's span says so, with the days left to its sunset", async () => {
      const answer = await request(`${gw.url}/pets/1`, { key: keyOf("acme") });
      assert.equal(answer.status, 200);
      const traceId = gw.logs.messages("request").at(-1)?.trace_id as string;
      const server = await eventually("the deprecated call's span", () =>
        receiver.spans.find((span) => span.traceId === traceId && span.kind === SERVER),
      );
      assert.equal(server.attributes["http.route"], "/v1/pets/{petId}");
      assert.equal(server.attributes["gateway.deprecated"], true);
      // The sunset as the document the gateway serves dates it (x-gateway-deprecation).
      const getPet = gw.gateway.api.operation("getPet");
      assert.ok(getPet);
      const { sunset } = getPet.extensions["x-gateway-deprecation"] as { sunset: string };
      const days = (Date.parse(sunset) - Date.now()) / 86_400_000;
      const noted = server.attributes["gateway.note.days_to_sunset"];
      assert.equal(typeof noted, "number");
      assert.ok(Math.abs((noted as number) - days) <= 1, `${noted} days, about ${days} left`);
      // The same note on the access line, where a log search finds it.
      const notes = gw.logs.messages("request").at(-1)?.notes as Record<string, unknown> | undefined;
      assert.equal(notes?.daysToSunset, noted);
    });

    test("a scrape asking for OpenMetrics finds the request's trace id as the exemplar of its duration", async () => {
      const trace = randomBytes(16).toString("hex");
      const answer = await request(`${gw.url}/pets`, {
        key: keyOf("acme"),
        headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-01` },
      });
      assert.equal(answer.status, 200);
      const open = await request(`${gw.opsUrl}/metrics`, {
        headers: { accept: PROMETHEUS_ACCEPT },
      });
      assert.match(String(open.headers["content-type"]), /^application\/openmetrics-text; version=1\.0\.0/);
      assert.match(open.body, /# EOF\n$/);
      // The newest request of its series and bucket: its trace id, its duration, within the bucket.
      const line = open.body.split("\n").find((text) => text.includes(`{trace_id="${trace}"}`));
      assert.ok(line, "an exemplar with the request's trace id");
      const [, le, seconds] =
        /^http_server_request_duration_seconds_bucket\{le="([^"]+)",operation="listPets",http_request_method="GET",http_response_status_code="200"\} \d+ # \{trace_id="[0-9a-f]{32}"\} (\S+) \S+$/.exec(
          line,
        ) ?? [];
      assert.ok(Number(seconds) > 0 && Number(seconds) <= Number(le), line);
      // A scraper that does not ask gets Prometheus text, counters named as before.
      const text = await request(`${gw.opsUrl}/metrics`);
      assert.match(String(text.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
      assert.doesNotMatch(text.body, /# \{/);
      assert.ok(sampleValue(parsePrometheus(text.body), "gateway_trace_spans_dropped_total") >= 0);
      assert.match(text.body, /^gateway_trace_spans_dropped_total /m);
    });

    test("a collector answering 500 costs no request, and its lost spans are counted", async () => {
      receiver.answerWith(500);
      try {
        for (let i = 0; i < 5; i++)
          assert.equal((await request(`${gw.url}/pets`, { key: keyOf("acme") })).status, 200);
        await eventually(
          "dropped spans counted",
          async () => (sampleValue(await scrape(gw), "gateway_trace_spans_dropped_total") ?? 0) > 0,
          15_000,
        );
      } finally {
        receiver.answerWith(200);
      }
    });

    test("every attribute the spans carried is one docs/reference/tracing.md lists", () => {
      assert.ok(receiver.spans.length >= 6, `${receiver.spans.length} spans`);
      for (const span of receiver.spans) {
        const rows = span.kind === SERVER ? SERVER_SPAN_ATTRIBUTES : CLIENT_SPAN_ATTRIBUTES;
        for (const name of Object.keys(span.attributes))
          assert.ok(
            isListedAttribute(name, rows),
            `${name} of a ${span.kind === SERVER ? "server" : "client"} span`,
          );
        for (const name of Object.keys(span.resource))
          assert.ok(isListedAttribute(name, RESOURCE_ATTRIBUTES) || name === "deployment.environment", name);
      }
    });
  });
}

// Decision mode: each decision is one server span, the child of the traceparent its call carried
// (the client's, passed on by nginx's auth_request, or Envoy's own span), described by the
// original request the proxy reported, and a leaf: the backend's traceparent stays the client's.
// Calls are made as the proxies make them (nginx's generated config's headers; Envoy's through the
// harness acting on its generated config).
function decisionSuite() {
  describe("in decision mode", { concurrency: 1 }, () => {
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
    let traced: TracedDecision;
    const spansOf = (trace: string, count = 1) => traced.spansOf(trace, count);
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
      // The proxies are this test (and the Envoy harness) at 127.0.0.1.
      traced = await startTracedDecision();
      ({ keys, receiver, backend, gw } = traced);
      const { contract } = traced;
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
      await traced?.close();
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
            "gateway.decided_for",
            "gateway.decision",
            "gateway.note.limit_adjusted",
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
            "gateway.decided_for": "nginx",
            "gateway.decision": "allow",
            "gateway.note.limit_adjusted": "clamped_to_maximum",
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
            "gateway.decided_for",
            "gateway.decision",
            "gateway.consumer",
          ]),
          {
            "http.response.status_code": 401,
            "gateway.refusal.code": "INVALID_API_KEY",
            "gateway.refusal.reason": "auth",
            "gateway.decided_for": "nginx",
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
        assert.equal(span.attributes["gateway.decided_for"], "envoy");
        assert.equal(span.attributes["gateway.decision"], "allow");
        // getPet is deprecated in the bundled document.
        assert.equal(span.attributes["gateway.deprecated"], true);
        assert.equal(typeof span.attributes["gateway.note.days_to_sunset"], "number");
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
        assert.equal(span.attributes["gateway.decided_for"], "envoy");
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
}

function pick(span: ReceivedSpan, names: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const name of names) if (span.attributes[name] !== undefined) picked[name] = span.attributes[name];
  return picked;
}

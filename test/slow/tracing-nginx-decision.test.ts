// A client's trace through Debian's nginx with the generated config, in front of the gateway in
// decision mode exporting to a real OTLP receiver: nginx's auth_request subrequest carries the
// client's traceparent, so the decision's span is the child of the client's span, and the backend
// gets the client's traceparent unchanged (the decision is a sibling leaf, not the backend's
// parent). A denial's span has the status the client got, not the 403 that carried it to nginx,
// and nginx's @gateway_deny call to the render endpoint adds no span.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { nginxConfig } from "../../src/decision/nginx-config.ts";
import type { OtlpReceiver } from "../fixtures/otlp-receiver.ts";
import type { ProgrammableBackend } from "../fixtures/programmable-backend.ts";
import type { TestGateway } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import type { KeysFile } from "../support/keys.ts";
import { freePort, type NginxProcess, nginxSkipReason, startNginx } from "../support/nginx.ts";
import { startTracedDecision, type TracedDecision } from "../support/tracing.ts";

const SERVER = 2;
const CLIENT_SPAN = "00f067aa0ba902b7";
const newTrace = () => randomBytes(16).toString("hex");

describe("a client's trace through real nginx and the decision service", { skip: nginxSkipReason() }, () => {
  let keys: KeysFile;
  let receiver: OtlpReceiver;
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let nginx: NginxProcess;
  let traced: TracedDecision;
  const spansOf = (trace: string) => traced.spansOf(trace);

  before(async () => {
    traced = await startTracedDecision();
    ({ keys, receiver, backend, gw } = traced);
    const { contract } = traced;
    const port = await freePort();
    nginx = await startNginx(
      nginxConfig(contract, {
        decisionUrl: gw.origin,
        upstreamUrl: backend.url,
        listenPort: port,
        timeoutMs: 1000,
      }),
      port,
    );
  });
  after(async () => {
    await nginx?.stop();
    await traced?.close();
  });

  test("an allowed request: the decision is the child of the client's span, and the backend gets the client's traceparent", async () => {
    const trace = newTrace();
    const traceparent = `00-${trace}-${CLIENT_SPAN}-01`;
    const answer = await request(`${nginx.origin}/v1/pets?limit=1000`, {
      key: keys.key,
      headers: { traceparent, tracestate: "rojo=1" },
    });
    assert.equal(answer.status, 200, answer.body);
    const received = backend.requests.at(-1);
    assert.equal(received?.url, "/v1/pets?limit=100");
    assert.equal(received?.headers.traceparent, traceparent);
    assert.equal(received?.headers.tracestate, "rojo=1");
    const [span, ...others] = await spansOf(trace);
    assert.ok(span);
    assert.deepEqual(others, []);
    assert.equal(span.kind, SERVER);
    assert.equal(span.parentSpanId, CLIENT_SPAN);
    assert.equal(span.traceState, "rojo=1");
    assert.equal(span.name, "GET /v1/pets");
    assert.equal(span.attributes["url.path"], "/v1/pets");
    assert.equal(span.attributes["url.query"], "limit=1000");
    assert.equal(span.attributes["client.address"], "127.0.0.1");
    // The Host of the decision call: nginx names its decision upstream (docs/reference/tracing.md).
    assert.equal(span.attributes["server.address"], "gateway_decision");
    assert.equal(span.attributes["gateway.decided_for"], "nginx");
    assert.equal(span.attributes["gateway.consumer"], "alice");
    assert.equal(span.attributes["gateway.note.limit_adjusted"], "clamped_to_maximum");
  });

  test("a refused request: one span, with the status the client got, and none for the render endpoint", async () => {
    const trace = newTrace();
    const answer = await request(`${nginx.origin}/v1/pets/1`, {
      headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-01` },
    });
    assert.equal(answer.status, 401);
    assert.equal(answer.json<{ code: string }>().code, "MISSING_API_KEY");
    const [span] = await spansOf(trace);
    // A later request's span has arrived: by then a span of the render call would have too.
    const later = newTrace();
    await request(`${nginx.origin}/v1/pets`, {
      key: keys.key,
      headers: { traceparent: `00-${later}-${CLIENT_SPAN}-01` },
    });
    await spansOf(later);
    assert.equal(receiver.spans.filter((s) => s.traceId === trace).length, 1);
    assert.ok(!receiver.spans.some((s) => String(s.attributes["url.path"]).startsWith("/decide/")));
    assert.equal(span?.attributes["http.response.status_code"], 401);
    assert.equal(span?.attributes["gateway.refusal.code"], "MISSING_API_KEY");
  });
});

// The client's W3C trace context through a real gateway with no exporter: a valid traceparent
// reaches the backend unchanged and names the request in every log line, none is invented, and
// an invalid one goes nowhere and never fails the request.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { DEPRECATED_CALL_MSG } from "../policies/lifecycle/deprecation-report.ts";
import { CONTRACT_VIOLATION_MSG } from "../policies/response-contract/report.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { contractBrokenForPet13 } from "./support/deprecation-page.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile, writeKeysFileAt } from "./support/keys.ts";

const keys = writeKeysFile(["acme"]);
const { file: keysFile, keyOf } = keys;
// A key of 32 lower-case hex digits has a trace id's shape.
const HEX_KEY = randomBytes(16).toString("hex");
writeKeysFileAt(keysFile, [...keys.keys, { consumer: "hexco", key: HEX_KEY }]);
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";
const TRACEPARENT = `00-${TRACE}-${SPAN}-01`;
// Before getPet's sunset: a deprecated call that is still answered.
const BEFORE_SUNSET = Date.parse("2030-10-01T00:00:00Z");

describe("trace context without an exporter", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractBrokenForPet13("not-a-number"));
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      now: () => BEFORE_SUNSET,
    });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  const get = (path: string, headers: Record<string, string> = {}) =>
    request(`${gw.url}${path}`, { key: keyOf("acme"), headers });
  const lastAccessLine = () => gw.logs.messages("request").at(-1) as Record<string, unknown>;

  test("a valid traceparent and tracestate reach the backend unchanged", async () => {
    const tracestate = "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7";
    const answer = await get("/pets", { traceparent: TRACEPARENT, tracestate });
    assert.equal(answer.status, 200);
    const received = backend.requests.at(-1)?.headers;
    assert.equal(received?.traceparent, TRACEPARENT);
    assert.equal(received?.tracestate, tracestate);
    assert.equal(lastAccessLine().trace_id, TRACE);
    assert.equal(lastAccessLine().span_id, SPAN);
  });

  test("a traceparent whose trace id is a key is dropped, and the access line says somebody tried", async () => {
    // The request's own key, and somebody else's: either would be in every log line as trace_id.
    for (const key of [HEX_KEY, keyOf("acme")]) {
      const answer = await request(`${gw.url}/pets`, {
        key,
        headers: { traceparent: `00-${HEX_KEY}-${SPAN}-01`, tracestate: "rojo=1" },
      });
      assert.equal(answer.status, 200);
      assert.equal(backend.requests.at(-1)?.headers.traceparent, undefined);
      assert.equal(backend.requests.at(-1)?.headers.tracestate, undefined);
      assert.equal(lastAccessLine().trace_id, undefined);
      assert.equal(lastAccessLine().traceparentDropped, "credential");
    }
  });

  test("a request without a traceparent reaches the backend without one, and is logged without ids", async () => {
    assert.equal((await get("/pets")).status, 200);
    assert.equal(backend.requests.at(-1)?.headers.traceparent, undefined);
    assert.equal(lastAccessLine().trace_id, undefined);
    assert.equal(lastAccessLine().span_id, undefined);
  });

  test("a tracestate without a traceparent is not forwarded", async () => {
    assert.equal((await get("/pets", { tracestate: "rojo=1" })).status, 200);
    assert.equal(backend.requests.at(-1)?.headers.tracestate, undefined);
  });

  test("an invalid tracestate is dropped and the trace goes on", async () => {
    assert.equal((await get("/pets", { traceparent: TRACEPARENT, tracestate: "Rojo=1" })).status, 200);
    assert.equal(backend.requests.at(-1)?.headers.traceparent, TRACEPARENT);
    assert.equal(backend.requests.at(-1)?.headers.tracestate, undefined);
  });

  for (const [name, value] of [
    ["of the wrong length", TRACEPARENT.slice(0, -1)],
    ["with an all-zero trace id", `00-${"0".repeat(32)}-${SPAN}-01`],
    ["with an all-zero span id", `00-${TRACE}-${"0".repeat(16)}-01`],
    ["of version ff", `ff-${TRACE}-${SPAN}-01`],
    ["with bad hex", `00-${TRACE.slice(0, -1)}z-${SPAN}-01`],
  ]) {
    test(`a traceparent ${name} is not forwarded, nor its tracestate, and the request is answered`, async () => {
      const answer = await get("/pets", { traceparent: value as string, tracestate: "rojo=1" });
      assert.equal(answer.status, 200);
      const received = backend.requests.at(-1)?.headers;
      assert.equal(received?.traceparent, undefined);
      assert.equal(received?.tracestate, undefined);
      assert.equal(lastAccessLine().trace_id, undefined);
    });
  }

  test("the deprecated-call and contract-violation lines name the trace", async () => {
    // The violation is reported or enforced as configured: either way it is logged.
    await get("/pets/13", { traceparent: TRACEPARENT });
    for (const msg of [DEPRECATED_CALL_MSG, CONTRACT_VIOLATION_MSG, "request"]) {
      const line = gw.logs.messages(msg).at(-1);
      assert.equal(line?.trace_id, TRACE, msg);
      assert.equal(line?.span_id, SPAN, msg);
    }
  });

  test("no traceparent a client sends makes the gateway fail the request", async () => {
    const printable = fc.string({
      unit: fc.constantFrom(..."0123456789abcdefF-x "),
      minLength: 1,
      maxLength: 70,
    });
    await fc.assert(
      fc.asyncProperty(printable, async (value) => {
        const answer = await get("/pets", { traceparent: value.trim() || "x" });
        assert.equal(answer.status, 200);
      }),
      { numRuns: 30 },
    );
  });
});

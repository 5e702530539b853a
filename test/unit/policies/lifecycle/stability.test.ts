// The stability part of the lifecycle, called in memory with a fake exchange.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Counter, Registry } from "prom-client";
import { consumerCounters } from "../../../../policies/lifecycle/consumers.ts";
import { STABILITY_HEADER, stabilityPhases } from "../../../../policies/lifecycle/stability.ts";
import type { Operation } from "../../../../src/openapi.ts";
import type { Exchange } from "../../../../src/policy.ts";

const operation = { id: "listToys", method: "GET", path: "/toys" } as Operation;

function setting(refuseExperimental: boolean) {
  const registry = new Registry();
  const calls = new Counter({
    name: "calls",
    help: "calls",
    labelNames: ["operation", "stability", "consumer"] as const,
    registers: [registry],
  });
  return { registry, setting: { basePath: "/v1", refuseExperimental, calls, countBy: consumerCounters(1) } };
}

const exchange = (consumer: string | undefined) => ({ consumer, notes: {} }) as Partial<Exchange> as Exchange;

test("an experimental operation in production is refused with 403 OPERATION_NOT_AVAILABLE, and counted", async () => {
  const { registry, setting: given } = setting(true);
  const phases = stabilityPhases(operation, "experimental", given);
  const reply = phases.onRequest(exchange("acme"));
  assert.equal(reply?.code, "OPERATION_NOT_AVAILABLE");
  assert.equal(reply?.status, 403);
  assert.equal(reply?.reason, "lifecycle");
  assert.equal(reply?.message, "GET /v1/toys is experimental and not available in production");
  assert.match(
    await registry.metrics(),
    /calls\{operation="listToys",stability="experimental",consumer="acme"\} 1/,
  );
});

test("a beta operation is served with its marker in a header, past the consumer cap counted as _other", async () => {
  const { registry, setting: given } = setting(true);
  const phases = stabilityPhases(operation, "beta", given);
  const call = exchange("acme");
  assert.equal(phases.onRequest(call), undefined);
  assert.equal(phases.onRequest(exchange("globex")), undefined);
  assert.equal(call.notes.stability, "beta");
  const headers: Record<string, string> = {};
  phases.onReply(call, 200, headers);
  assert.equal(headers[STABILITY_HEADER], "beta");
  assert.match(await registry.metrics(), /consumer="_other"\} 1/);
});

// The plan says, per operation, what each proxy in front of decision mode gives up, from the same
// capability facts the doors act on and the plugin-mode matrix states its cells with
// (src/decision/capabilities.ts), never from a list of its own.
import assert from "node:assert/strict";
import { test } from "node:test";
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import { PROXY_CAPABILITIES, PROXY_NAMES } from "../../src/decision/capabilities.ts";
import { doorNamed, PROXIES } from "../../src/decision/doors.ts";
import { loadApiDescription } from "../../src/openapi.ts";
import { type GatewayPlan, planGateway } from "../../src/plan.ts";
import { planText } from "../../src/plan-text.ts";
import { DEFAULT_OPENAPI_FILE } from "../../src/project-files.ts";

function petStorePlan(config: Record<string, unknown> = {}): GatewayPlan {
  return planGateway({
    api: loadApiDescription(DEFAULT_OPENAPI_FILE),
    config: validateConfig(config, policies),
    policies,
    environment: "production",
    now: () => Date.parse("2026-11-25T00:00:00Z"),
  });
}

// Compiled once: every test reads the same plan.
const PLAN = petStorePlan();
const TEXT = planText(PLAN, { openapi: "openapi.json", config: "gateway.json" });

const operation = (plan: GatewayPlan, id: string) => {
  const found = plan.operations.find((o) => o.operation === id);
  assert.ok(found, id);
  return found;
};

test("an operation with a body: through every proxy that sends the decision no body, the body is not validated", () => {
  const createPet = operation(PLAN, "createPet");
  const unjudged = createPet.decisionMode.filter((s) => s.givesUp === "request-body-validation");
  assert.deepEqual(
    unjudged.map((s) => s.proxy),
    ["nginx", "caddy", "haproxy"],
  );
  assert.deepEqual(
    unjudged.map((s) => s.proxy),
    PROXY_NAMES.filter((proxy) => !PROXY_CAPABILITIES[proxy].sendsBody),
  );
  assert.ok(
    TEXT.includes(
      "  decision mode: through nginx the request body is not validated (nginx's auth_request sends the decision no body)\n",
    ),
    TEXT,
  );
});

test("through Traefik, the query parameters a policy sets reach the backend as the client sent them", () => {
  const listPets = operation(PLAN, "listPets");
  assert.deepEqual(listPets.decisionMode, [
    {
      proxy: "traefik",
      givesUp: "query-set-by-policy",
      policy: "limit",
      parameters: ["limit"],
      because: "Traefik's forwardAuth cannot rewrite the target",
    },
  ]);
  assert.ok(
    TEXT.includes(
      "  decision mode: through Traefik the query parameter limit reaches the backend as the client sent it, not as the limit policy sets it (Traefik's forwardAuth cannot rewrite the target)\n",
    ),
    TEXT,
  );
});

test("an operation no proxy carries differently says nothing of decision mode", () => {
  assert.deepEqual(operation(PLAN, "getPet").decisionMode, []);
  // With no page size clamped, nothing is lost through Traefik on the list either.
  assert.deepEqual(
    operation(petStorePlan({ policies: { limit: { parameters: [] } } }), "listPets").decisionMode,
    [],
  );
});

test("the doors send the body to the body phases exactly where the capability facts say the proxy sends it", () => {
  assert.deepEqual([...PROXIES].sort(), [...PROXY_NAMES].sort());
  for (const proxy of PROXY_NAMES) {
    assert.equal(doorNamed(proxy)?.readsBody, PROXY_CAPABILITIES[proxy].sendsBody, proxy);
  }
});

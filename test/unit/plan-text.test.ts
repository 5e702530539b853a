// The plan as an operator's terminal shows it, for a document someone else wrote.
import assert from "node:assert/strict";
import { test } from "node:test";
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import { planGateway } from "../../src/plan.ts";
import { planJson, planText } from "../../src/plan-text.ts";
import { loadDocument, minimalDocument } from "../support/openapi-documents.ts";

// ESC sequences (clear the screen, set the window title), BEL, CR, C1's CSI, DEL and a bidi override.
const HOSTILE_ID = "getPet\u001b[2J\u001b]0;owned\u0007\r\u009b31m\u007f\u202etePteg";
const HOSTILE_HEADER = "X-Trace\u001b[8m\nGET /v1/admin";
const SOURCES = { openapi: "openapi.json", config: "gateway.json" };

/** The first character a terminal acts on (C0 but those allowed, DEL, C1, a bidi control), or undefined. */
function terminalControl(text: string, allowed = ""): string | undefined {
  for (const character of text) {
    const code = character.charCodeAt(0);
    const control =
      code < 0x20 ||
      (code >= 0x7f && code <= 0x9f) ||
      (code >= 0x202a && code <= 0x202e) ||
      (code >= 0x2066 && code <= 0x2069);
    if (control && !allowed.includes(character)) return character;
  }
  return undefined;
}

function hostilePlan() {
  const document = minimalDocument() as { paths: Record<string, Record<string, Record<string, unknown>>> };
  const getPet = document.paths["/pets/{petId}"]?.get as { operationId: string; parameters: unknown[] };
  getPet.operationId = HOSTILE_ID;
  getPet.parameters.push({ name: HOSTILE_HEADER, in: "header", schema: { type: "string" } });
  const config = validateConfig({ policies: { limit: { parameters: [] } } }, policies);
  return planGateway({
    api: loadDocument(document),
    config,
    policies,
    environment: "production",
    now: () => Date.parse("2030-01-01T00:00:00Z"),
  });
}

test("npm run plan prints no control character of the document's names, in any line", () => {
  const text = planText(hostilePlan(), SOURCES);
  const lines = text.split("\n");
  for (const line of lines) {
    assert.equal(terminalControl(line), undefined, JSON.stringify(line));
  }
  assert.ok(lines.includes("GET /v1/pets/{petId} (getPet[2J]0;owned31mtePteg)"), text);
  // The header's name stays on its own line: no forged line of the plan's own.
  assert.ok(!lines.some((line) => line.startsWith("GET /v1/admin")), text);
  assert.ok(
    lines.some((line) => line.includes("X-Trace[8mGET /v1/admin (header)")),
    text,
  );
});

test("npm run plan --format json gives the names exactly, escaped, with none raw on the terminal", () => {
  const json = planJson(hostilePlan(), SOURCES);
  assert.equal(terminalControl(json, "\n"), undefined);
  const read = JSON.parse(json) as { operations: { operation: string; parameters: { name: string }[] }[] };
  const getPet = read.operations.find((operation) => operation.operation === HOSTILE_ID);
  assert.ok(getPet, "the operationId as the document wrote it");
  assert.ok(getPet.parameters.some((parameter) => parameter.name === HOSTILE_HEADER));
});

test("npm run plan says where each operation is forwarded: the upstream's URL, never its credentials", () => {
  const plan = planGateway({
    api: loadDocument(minimalDocument()),
    config: validateConfig({}, policies),
    policies,
    environment: "production",
    upstreamUrl: "http://deploy:s3cret@pets.internal:3000/v1/",
    now: () => Date.parse("2030-01-01T00:00:00Z"),
  });
  const text = planText(plan, SOURCES);
  const lines = text.split("\n");
  assert.ok(lines.includes("upstream http://pets.internal:3000/v1"), text);
  assert.ok(lines.includes("  forwarded to: POST http://pets.internal:3000/v1/pets"), text);
  assert.ok(lines.includes("  forwarded to: GET http://pets.internal:3000/v1/pets/{petId}"), text);
  assert.doesNotMatch(text + planJson(plan, SOURCES), /s3cret|deploy@/);
});

test("with the demo backend, the plan forwards to the document's own paths", () => {
  const plan = planGateway({
    api: loadDocument(minimalDocument()),
    config: validateConfig({}, policies),
    policies,
    environment: "demo",
    now: () => Date.parse("2030-01-01T00:00:00Z"),
  });
  assert.equal(plan.upstream, "the bundled demo backend");
  assert.equal(plan.operations.find((o) => o.operation === "getPet")?.forwardedTo, "/v1/pets/{petId}");
});

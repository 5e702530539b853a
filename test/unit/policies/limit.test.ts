// The limit policy's request phase, called in memory with a fake exchange: no server, no socket.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { test } from "node:test";
import pino from "pino";
import limit from "../../../policies/limit/index.ts";
import { createMetrics } from "../../../src/metrics.ts";
import { loadApiDescription, type Operation } from "../../../src/openapi.ts";
import { type CoreExchange, newExchange } from "../../../src/pipeline/exchange.ts";
import { DEFAULT_OPENAPI_FILE } from "../../../src/project-files.ts";
import { loadDocument, OWN_DOCUMENT } from "../../support/openapi-documents.ts";

const api = loadApiDescription(DEFAULT_OPENAPI_FILE);
const listPets = api.operation("listPets") as Operation;

function onRequest() {
  const { registry } = createMetrics({ defaultMetrics: false });
  assert.ok(limit.metrics, "the limit policy registers its own counter");
  const instance = limit.create(
    { parameters: ["listPets.limit"] },
    {
      api,
      logger: pino({ level: "silent" }),
      environment: "production",
      now: Date.now,
      responseHeaders: () => [],
    },
    limit.metrics(registry),
  );
  const phase = instance.forOperation(listPets)?.onRequest;
  assert.ok(phase);
  return { phase, registry };
}

/** The core's own exchange, over a request that never touched a socket, the query parsed. */
function exchange(query: Record<string, string>): CoreExchange {
  const made = newExchange(
    { url: "/v1/pets", headers: {} } as IncomingMessage,
    {} as ServerResponse,
    "id-1",
    "",
  );
  for (const [name, value] of Object.entries(query)) made.query.set(name, value);
  return made;
}

test("a limit above the maximum is clamped, told in a header and counted on the policy's own counter", async () => {
  const { phase, registry } = onRequest();
  const call = exchange({ limit: "5000" });
  assert.equal(phase(call), undefined);
  assert.equal(call.query.get("limit"), "100");
  assert.equal(call.queryChanged, true);
  assert.equal(call.responseHeaders["x-limit-applied"], "100");
  const text = await registry.metrics();
  assert.match(
    text,
    /gateway_limit_adjustments_total\{operation="listPets",parameter="limit",adjustment="clamped_to_maximum"\} 1/,
  );
});

test("a limit that is no integer is refused with the catalogue's INVALID_PARAMETER, reason validation", () => {
  const { phase } = onRequest();
  const reply = phase(exchange({ limit: "ten" }));
  assert.equal(reply?.code, "INVALID_PARAMETER");
  assert.equal(reply?.status, 400);
  assert.equal(reply?.reason, "validation");
  assert.equal(reply?.message, "limit must be an integer");
});

test("left unset, limit clamps each operation's page size, bounds read from the document", () => {
  // A team's document whose list is not listPets, nor its page size limit: the name rule finds per_page.
  const document = JSON.parse(readFileSync(OWN_DOCUMENT, "utf8"));
  document.paths["/pets"].get.operationId = "findAnimals";
  document.paths["/pets"].get.parameters[0].name = "per_page";
  const own = loadDocument(document);
  const context = { api: own, environment: "production", now: Date.now };
  const { registry } = createMetrics({ defaultMetrics: false });
  const instance = limit.create(
    {},
    { ...context, logger: pino({ level: "silent" }), responseHeaders: () => [] },
    (limit.metrics as NonNullable<typeof limit.metrics>)(registry),
  );
  const findAnimals = own.operation("findAnimals") as Operation;
  assert.equal(instance.forOperation(own.operation("createPet") as Operation), undefined);
  const call = exchange({ per_page: "500" });
  assert.equal(instance.forOperation(findAnimals)?.onRequest?.(call), undefined);
  assert.equal(call.query.get("per_page"), "100");
  assert.equal(call.responseHeaders["x-per_page-applied"], "100");
  assert.deepEqual(limit.plan?.({}, context).operation?.(findAnimals)?.data, [
    { parameter: "per_page", minimum: 1, maximum: 100, default: 20 },
  ]);
});

// The gateway program, as `npm start` runs it, reads OPENAPI_FILE as a 3.0 YAML document split over
// two files, and takes its base path from the config file when the document's servers disagree.
// The plan command refuses what start-up refuses, with the same line.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { boundedConfig, boundedConfigFile } from "../support/config-file.ts";
import { runGatewayProgram, startGatewayProgram } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { writeDocumentFiles } from "../support/openapi-documents.ts";
import { type BackendProcess, runProgram, startDemoBackendProcess } from "../support/processes.ts";
import { PROJECT_ROOT } from "../support/program.ts";

const keys = writeKeysFile(["acme"]);
const { file: keysFile, key } = keys;
const YAML_30 = join(PROJECT_ROOT, "test/fixtures/openapi-3.0/openapi.yaml");
let backend: BackendProcess;

before(async () => {
  backend = await startDemoBackendProcess();
});
after(async () => {
  await backend.close();
});

/** A document whose servers disagree on the path: the bundled one with a local server added. */
function disagreeingDocument(): string {
  const document = JSON.parse(readFileSync(join(PROJECT_ROOT, "config/openapi.json"), "utf8"));
  document.servers.push({ url: "http://localhost:3000" });
  return join(writeDocumentFiles({ "openapi.json": document }), "openapi.json");
}

test("OPENAPI_FILE naming a 3.0 YAML document split over two files starts the gateway", async (t) => {
  const gateway = await startGatewayProgram(
    { upstreamUrl: backend.url, keys, config: boundedConfig(), env: { OPENAPI_FILE: YAML_30 } },
    t,
  );
  const created = await request(`${gateway.origin}/v1/pets`, {
    key,
    method: "POST",
    body: JSON.stringify({ name: "Biscuit", categoryId: 7 }),
  });
  assert.equal(created.status, 201, created.body);
  const refused = await request(`${gateway.origin}/v1/pets`, {
    key,
    method: "POST",
    body: JSON.stringify({ id: 1, name: "Biscuit", categoryId: 7 }),
  });
  assert.equal(refused.status, 400);
  assert.match(refused.body, /\/id is read-only/);
  // Only `deprecated: true` on getPet, as written: tracked, and start-up says how to date it.
  const undated = gateway.lines.find((line) => line.warning === "deprecation-undated");
  assert.deepEqual(undated?.operations, ["getPet"]);
  const pet = JSON.parse(created.body) as { id: number };
  const fetched = await request(`${gateway.origin}/v1/pets/${pet.id}`, { key });
  assert.equal(fetched.status, 200);
  assert.equal(fetched.headers.deprecation, undefined, "no date, no Deprecation header");
});

test("servers that disagree stop start-up in one line naming them; basePath in the config settles it", async (t) => {
  const openapi = disagreeingDocument();
  const { code, stderr } = await runGatewayProgram({ keys: false, env: { OPENAPI_FILE: openapi } });
  assert.equal(code, 1);
  assert.equal(stderr.trim().split("\n").length, 1, stderr);
  assert.match(
    stderr,
    /servers disagree on the base path \(\/v1 in https:\/\/petstore\.example\.com\/v1, \/ in http:\/\/localhost:3000\): set basePath in the gateway config/,
  );
  const gateway = await startGatewayProgram(
    {
      upstreamUrl: backend.url,
      keys,
      config: boundedConfig({ basePath: "/v1" }),
      env: { OPENAPI_FILE: openapi },
    },
    t,
  );
  assert.equal((await request(`${gateway.origin}/v1/pets`, { key })).status, 200);
});

/** A program of the project run to its end, on ports the OS chooses should it listen. */
const run = (args: readonly string[], env: Record<string, string> = {}) =>
  runProgram(args, { env: { PORT: "0", OPS_PORT: "0", ...env } });

test("a date given in the document and the config: plan and gateway both refuse, with the same line", async () => {
  const config = boundedConfigFile({
    upstream: { url: "http://127.0.0.1:9/v1" },
    policies: {
      auth: { keysFile },
      lifecycle: { operations: { getPet: { since: "2026-01-01T00:00:00Z" } } },
    },
  });
  const [plan, gateway] = await Promise.all([
    run(["scripts/plan.ts", "--config", config]),
    runGatewayProgram({ keys: false, env: { GATEWAY_CONFIG: config } }),
  ]);
  assert.equal(plan.code, 1);
  assert.equal(gateway.code, 1);
  assert.equal(plan.stdout, "");
  assert.equal(plan.stderr.split("\n").length, 2, "one line");
  assert.equal(plan.stderr, gateway.stderr);
  assert.match(
    plan.stderr,
    /^petstore-gateway: invalid config: policies\.lifecycle\.operations\.getPet\.since: getPet's since is given by x-gateway-deprecation in the document too; give it in one place\n$/,
  );
});

test("a pattern with a lookahead: plan and gateway both refuse, with the same line naming where it is", async () => {
  const document = JSON.parse(readFileSync(join(PROJECT_ROOT, "config/openapi.json"), "utf8"));
  document.components.schemas.NewPet.properties.name.pattern = "^(?!admin$)\\w+$";
  const openapi = join(writeDocumentFiles({ "openapi.json": document }), "openapi.json");
  const config = boundedConfigFile({
    openapi,
    upstream: { url: "http://127.0.0.1:9/v1" },
    policies: { auth: { keysFile } },
  });
  const [plan, gateway] = await Promise.all([
    run(["scripts/plan.ts", "--config", config]),
    runGatewayProgram({ keys: false, env: { GATEWAY_CONFIG: config } }),
  ]);
  assert.equal(plan.code, 1);
  assert.equal(gateway.code, 1);
  assert.equal(plan.stderr, gateway.stderr);
  assert.equal(plan.stderr.split("\n").length, 2, "one line");
  assert.ok(
    plan.stderr.includes(
      'the pattern "^(?!admin$)\\\\w+$" at #/components/schemas/NewPet/properties/name/pattern is refused: a negative lookahead (?!...) has no linear-time match',
    ),
    plan.stderr,
  );
});

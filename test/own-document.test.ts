// A team's own description of the Pet Store, with none of the gateway's extensions
// (test/fixtures/openapi-own.json): the document, not code, says who needs a key, what is
// deprecated and which media types a body may have; the config dates what the document does not;
// start-up says, one warn line each, what the gateway will not do as the document asks.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import policies from "../policies/index.ts";
import type { DeprecationReport } from "../policies/lifecycle/deprecation-report.ts";
import { planForCommand } from "../src/plan.ts";
import { planJson, planText } from "../src/plan-text.ts";
import { DEFAULT_CONFIG_FILE } from "../src/project-files.ts";
import { boundedConfig, boundedConfigFile } from "./support/config-file.ts";
import {
  startGateway,
  startGatewayProgram,
  type TestGateway,
  type TestGatewayProgram,
} from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { sampleValue, scrape } from "./support/metrics.ts";
import { failClosedSecurityDocument, OWN_DOCUMENT, writeDocumentFiles } from "./support/openapi-documents.ts";
import {
  type BackendProcess,
  type GatewayProcess,
  runProgram,
  startDemoBackendProcess,
} from "./support/processes.ts";
import { PROJECT_ROOT } from "./support/program.ts";

const keys = writeKeysFile(["acme"]);
const { file: keysFile, keyOf } = keys;
const acme = keyOf("acme");
const SINCE = "2026-01-01T00:00:00Z";
const SUNSET = "2030-12-05T00:00:00Z";

/** A program of the project run to its end, on ports the OS chooses should it listen. */
const run = (args: readonly string[], env: Record<string, string> = {}) =>
  runProgram(args, { env: { PORT: "0", OPS_PORT: "0", ...env } });

const warnings = (gw: GatewayProcess, warning: string) =>
  gw.lines.filter((line) => line.level === "warn" && line.warning === warning);

describe("a team's own document, without the gateway's extensions, in front of the demo backend", () => {
  let backend: BackendProcess;
  let gw: TestGatewayProgram;
  let url: string;
  before(async () => {
    backend = await startDemoBackendProcess();
    const config = boundedConfig({
      openapi: OWN_DOCUMENT,
      upstream: { url: backend.url },
      policies: {
        // The backend gets the gateway's own credential: a public call brings none.
        auth: { keysFile, upstreamAuthorization: "replace", upstreamCredentialEnv: "PETS_SERVICE_TOKEN" },
        lifecycle: {
          operations: {
            getPet: { since: SINCE, sunset: SUNSET, successor: { method: "get", path: "/pets" } },
          },
        },
      },
    });
    gw = await startGatewayProgram({ config, env: { PETS_SERVICE_TOKEN: "service-token" } });
    url = `${gw.origin}/v1`;
  });
  after(async () => {
    await gw.stop();
    await backend.close();
  });

  test("an operation without security needs a bearer key, and start-up names it in one warn line", async () => {
    const refused = await request(`${url}/pets/1`);
    assert.equal(refused.status, 401);
    assert.equal(refused.json<{ code: string }>().code, "MISSING_API_KEY");
    const otherScheme = await request(`${url}/pets`, {
      method: "POST",
      headers: { "x-api-key": acme },
      body: JSON.stringify({ name: "Rex", categoryId: 1 }),
    });
    assert.equal(otherScheme.status, 401, "the apiKey scheme the document names is not accepted instead");
    assert.equal((await request(`${url}/pets/1`, { key: acme })).status, 200);
    const [line, ...more] = warnings(gw, "security-not-bearer");
    assert.ok(line, "a warn line names the operations");
    assert.equal(more.length, 0, "one line, not one per operation");
    assert.deepEqual(line.operations, ["createPet", "getPet"]);
    assert.match(String(line.msg), /createPet \(apiKeyHeader: apiKey\), getPet \(no security\)/);
  });

  test("an operation that says security: [] itself is served without a key", async () => {
    const answer = await request(`${url}/pets?limit=2`);
    assert.equal(answer.status, 200);
    assert.equal(answer.json<unknown[]>().length, 2);
    assert.equal(answer.headers["x-limit-applied"], "2");
  });

  test("a header parameter is passed on unchecked, and start-up names it with the reason", async () => {
    const answer = await request(`${url}/pets`, { headers: { "x-request-trace": "x".repeat(100) } });
    assert.equal(answer.status, 200, "its maxLength is not enforced");
    const [line, ...more] = warnings(gw, "parameters-not-checked");
    assert.ok(line);
    assert.equal(more.length, 0);
    assert.deepEqual(line.operations, ["listPets"]);
    assert.match(String(line.msg), /listPets X-Request-Trace \(header\)/);
    assert.match(String(line.msg), /checks path and query parameters only/);
  });

  test("deprecated: true dated only in the config sends Deprecation and Sunset and counts the caller", async () => {
    const answer = await request(`${url}/pets/1`, { key: acme, headers: { "user-agent": "acme-sync/2" } });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.deprecation, `@${Date.parse(SINCE) / 1000}`);
    assert.equal(answer.headers.sunset, "Thu, 05 Dec 2030 00:00:00 GMT");
    assert.equal(answer.headers.link, '</v1/pets>; rel="successor-version"');
    assert.equal(warnings(gw, "deprecation-undated").length, 0, "every date is given");
    const report = (await request(`${gw.opsUrl}/deprecations`)).json<DeprecationReport>();
    const [getPet] = report.operations;
    assert.equal(getPet?.operation, "getPet");
    assert.equal(getPet?.since, "2026-01-01T00:00:00.000Z");
    assert.equal(getPet?.sunset, "2030-12-05T00:00:00.000Z");
    assert.ok(getPet?.callers.some((row) => row.consumer === "acme" && row.lastUserAgent === "acme-sync/2"));
    const samples = await scrape(gw);
    assert.ok(
      sampleValue(samples, "gateway_deprecated_calls_total", { operation: "getPet", consumer: "acme" }) >= 1,
    );
  });

  test("a body in a +json media type the document declares is checked; an undeclared one gets 415", async () => {
    const created = await request(`${url}/pets`, {
      method: "POST",
      key: acme,
      headers: { "content-type": "application/vnd.petstore+json; charset=utf-8" },
      body: JSON.stringify({ name: "Rex", categoryId: 1 }),
    });
    assert.equal(created.status, 201, created.body);
    const invalid = await request(`${url}/pets`, {
      method: "POST",
      key: acme,
      headers: { "content-type": "application/vnd.petstore+json" },
      body: JSON.stringify({ name: "Rex" }),
    });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.json<{ code: string }>().code, "INVALID_BODY");
    const undeclared = await request(`${url}/pets`, {
      method: "POST",
      key: acme,
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ name: "Rex", categoryId: 1 }),
    });
    assert.equal(undeclared.status, 415);
    assert.match(
      undeclared.json<{ message: string }>().message,
      /application\/json or application\/vnd\.petstore\+json/,
    );
  });
});

// The plan as the command builds it (planForCommand), in this process; one run of the command
// itself, and its refusal beside the gateway's, in test/slow/openapi-documents.
describe("npm run plan", () => {
  const NOW = "2026-11-25T00:00:00Z";
  const planOutput = (given: { file: string; openapi?: string }, format: "text" | "json") => {
    const { plan, config, configFile } = planForCommand(policies, given, () => Date.parse(NOW));
    const sources = { openapi: config.openapi, config: configFile };
    return format === "json" ? planJson(plan, sources) : planText(plan, sources);
  };

  test("on the project's document: every operation, its key, bounds, stated rules and days to the sunset", () => {
    const stdout = planOutput({ file: boundedConfigFile() }, "text");
    assert.match(stdout, /^Pet Store 1\.0\.0: what petstore-gateway will enforce$/m);
    assert.match(stdout, /^Public operations \(no key\): none/m);
    for (const name of [
      "GET /v1/pets (listPets)",
      "POST /v1/pets (createPet)",
      "GET /v1/pets/{petId} (getPet)",
    ]) {
      assert.ok(stdout.includes(`\n${name}\n`), `${name} is listed`);
    }
    assert.match(stdout, /limit \(query, optional, integer int32\): default 20, minimum 1, maximum 100/);
    assert.match(stdout, /limit: limit clamped to 1\.\.100; 20 when absent/);
    assert.match(
      stdout,
      /page-size: a 200 page holds at most limit items \(stated in the document, report\)/,
    );
    assert.match(
      stdout,
      /sunset 2030-12-05T00:00:00\.000Z \(x-gateway-deprecation\.sunset\): 1471 days left/,
    );
    assert.doesNotMatch(stdout, /inferred/);
    assert.match(stdout, /not enforced as written[^\n]*\n {2}nothing\n$/);
  });

  test("run through npm from another directory, the paths typed there are read from there", async () => {
    // npm runs the script from the package root and says in INIT_CWD where the user was.
    const where = dirname(OWN_DOCUMENT);
    const { code, stdout, stderr } = await run(
      ["scripts/plan.ts", "--openapi", basename(OWN_DOCUMENT), "--now", NOW],
      { GATEWAY_CONFIG: boundedConfigFile(), INIT_CWD: where },
    );
    assert.equal(code, 0, stderr);
    assert.match(stdout, new RegExp(`^document ${basename(OWN_DOCUMENT).replace(".", "\\.")}, `, "m"));
  });

  test("a list whose page size is not inferred says so, in text and JSON; a near miss is also a warning", () => {
    const document = JSON.parse(readFileSync(OWN_DOCUMENT, "utf8"));
    // Two parameters fit the name rule: neither is taken until the document marks one.
    document.paths["/pets"].get.parameters.push({
      name: "per_page",
      in: "query",
      schema: { type: "integer", minimum: 1, maximum: 50 },
    });
    // A list with no parameter named like a page size, only offset: nothing to infer, nothing to warn.
    document.paths["/categories"] = {
      get: {
        operationId: "listCategories",
        parameters: [{ name: "offset", in: "query", schema: { type: "integer", minimum: 0, maximum: 1000 } }],
        responses: {
          "200": {
            description: "names",
            content: { "application/json": { schema: { type: "array", items: { type: "string" } } } },
          },
        },
      },
    };
    const openapi = join(writeDocumentFiles({ "openapi.json": document }), "openapi.json");
    const given = { file: boundedConfigFile(), openapi };
    const text = planOutput(given, "text");
    assert.match(
      text,
      /\n {2}page size: not inferred \(limit and per_page each fit the name rule; mark the page size x-gateway-page-size: true\)\n/,
    );
    assert.match(
      text,
      /\n {2}page size: not inferred \(no query parameter marked x-gateway-page-size, nor an integer one/,
    );
    assert.doesNotMatch(
      text,
      /limit: limit clamped/,
      "nothing clamps a page size the document does not give",
    );
    assert.doesNotMatch(text, /page-size: a 200 page/, "nor holds an answer to one");
    const plan = JSON.parse(planOutput(given, "json")) as {
      operations: { operation: string; pageSize: unknown }[];
      warnings: { warning: string; operations: string[]; message: string }[];
    };
    assert.deepEqual(
      plan.operations.map((o) => [
        o.operation,
        o.pageSize === null ? null : Object.keys(o.pageSize as object),
      ]),
      [
        ["listPets", ["parameter", "reason"]],
        ["createPet", null],
        ["getPet", null],
        ["listCategories", ["parameter", "reason"]],
      ],
    );
    const missed = plan.warnings.filter((w) => w.warning === "page-size-not-inferred");
    assert.deepEqual(
      missed.map((w) => w.operations),
      [["listPets"]],
    );
    assert.match(missed[0]?.message ?? "", /listPets \(limit and per_page each fit the name rule/);
  });

  test("--format json on a team's own document: public first, inferred rules report-only, what is ignored", () => {
    const stdout = planOutput(
      {
        file: boundedConfigFile({ policies: { responseContract: { mode: "enforce" } } }),
        openapi: OWN_DOCUMENT,
      },
      "json",
    );
    const plan = JSON.parse(stdout) as {
      operations: {
        operation: string;
        public: boolean;
        parameters: { name: string; checked: boolean }[];
        policies: Record<string, { [key: string]: unknown }>;
      }[];
      warnings: { warning: string; operations: string[]; fixes?: string[] }[];
    };
    assert.deepEqual(
      plan.operations.map((o) => [o.operation, o.public]),
      [
        ["listPets", true],
        ["createPet", false],
        ["getPet", false],
      ],
    );
    const listPets = plan.operations[0];
    assert.deepEqual(
      listPets?.parameters.map((p) => [p.name, p.checked]),
      [
        ["limit", true],
        ["status", true],
        ["X-Request-Trace", false],
      ],
    );
    const contract = listPets?.policies.responseContract as {
      mode: string;
      rules: { rule: string; source: string; mode: string }[];
      confirm: string;
    };
    assert.equal(contract.mode, "enforce");
    assert.deepEqual(
      contract.rules.map((r) => [r.rule, r.source, r.mode]),
      [
        ["page-size", "inferred", "report"],
        ["filter", "inferred", "report"],
      ],
    );
    assert.match(contract.confirm, /^"policies": \{"responseContract":\{"rules":\{"listPets":\[/);
    assert.deepEqual(
      plan.warnings.map((w) => [w.warning, w.operations]),
      [
        ["parameters-not-checked", ["listPets"]],
        ["security-not-bearer", ["createPet", "getPet"]],
        ["deprecation-undated", ["getPet"]],
      ],
    );
    assert.deepEqual(plan.warnings[2]?.fixes, [
      '"policies": {"lifecycle":{"operations":{"getPet":{"since":"<RFC 3339 date-time>","sunset":"<RFC 3339 date-time>"}}}}',
    ]);
  });

  test("docs/plan.md shows the bundled document and config's plan as it is", () => {
    const page = readFileSync(join(PROJECT_ROOT, "docs/plan.md"), "utf8");
    const shown = /`npm run plan -- --now ([^`]+)`\):\n\n```\n([\s\S]*?)```\n/.exec(page);
    assert.ok(shown, "docs/plan.md has the bundled plan with the instant it was counted from");
    const [, now, text] = shown;
    const { plan } = planForCommand(policies, { file: DEFAULT_CONFIG_FILE }, () => Date.parse(now as string));
    assert.equal(text, planText(plan, { openapi: "config/openapi.json", config: "config/gateway.json" }));
  });
});

describe("security the gateway cannot enforce as written fails closed, over HTTP", () => {
  let gw: TestGateway;
  before(async () => {
    const openapi = join(
      writeDocumentFiles({ "openapi.json": failClosedSecurityDocument() }),
      "openapi.json",
    );
    // No backend listens: a request that passes authentication gets 502, one that does not 401.
    gw = await startGateway({ upstreamUrl: "http://127.0.0.1:9/v1", keys, config: { openapi } });
  });
  after(() => gw.close());

  test("each operation refuses a request without a key (401) and lets a keyed one through", async () => {
    const calls = [
      { path: "/pets", method: "GET" },
      { path: "/pets", method: "POST", body: JSON.stringify({ name: "Biscuit", categoryId: 7 }) },
      { path: "/pets/1", method: "GET" },
    ];
    for (const { path, method, body } of calls) {
      const without = await request(`${gw.url}${path}`, { method, ...(body ? { body } : {}) });
      assert.equal(without.status, 401, `${method} ${path} without a key`);
      assert.equal(without.json<{ code: string }>().code, "MISSING_API_KEY");
      const keyed = await request(`${gw.url}${path}`, { method, key: acme, ...(body ? { body } : {}) });
      assert.equal(keyed.status, 502, `${method} ${path} with a key reaches the (absent) backend`);
    }
  });
});

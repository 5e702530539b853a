import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { DeprecationReport } from "../policies/lifecycle/deprecation-report.ts";
import lifecycle from "../policies/lifecycle/index.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { boundedConfigFile } from "./support/config-file.ts";
import { runReportCommand } from "./support/deprecation-page.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { type Answer, request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { sampleValue, scrape } from "./support/metrics.ts";
import { OWN_DOCUMENT } from "./support/openapi-documents.ts";
import { declaredResponseHeaders } from "./support/policy-harness.ts";
import { type BackendProcess, startDemoBackendProcess } from "./support/processes.ts";
import { PROJECT_ROOT } from "./support/program.ts";

const keys = writeKeysFile(["acme", "globex", "initech"]);
const { keyOf } = keys;
const acme = keyOf("acme");
const globex = keyOf("globex");
const initech = keyOf("initech");

const REAL_DOCUMENT = join(PROJECT_ROOT, "config/openapi.json");
const NEXT_DOCUMENT = join(PROJECT_ROOT, "test/fixtures/openapi-next.json");
const GET_PET_SINCE = Date.parse("2026-01-01T00:00:00Z");
const GET_PET_SUNSET = Date.parse("2030-12-05T00:00:00Z");
const DOCS = "https://docs.example.com/deprecations/get-pet";
// Every header the lifecycle may add, as it declares them for a document that has all it marks.
const { lifecycle: LIFECYCLE_HEADERS = [] } = await declaredResponseHeaders({ openapi: NEXT_DOCUMENT }, [
  lifecycle,
]);

/** RFC 9745 / RFC 9651 sf-date: "@" and an integer of seconds since the epoch. */
function structuredFieldDate(value: unknown): number {
  const match = /^@(-?[0-9]{1,15})$/.exec(String(value));
  assert.ok(match, `Deprecation ${String(value)} is not a structured-field date`);
  return Number(match[1]) * 1000;
}

/** RFC 9110 IMF-fixdate, the only HTTP-date form a sender may generate. */
function imfFixdate(value: unknown): number {
  assert.match(
    String(value),
    /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$/,
  );
  return Date.parse(String(value));
}

function assertAnnouncesGetPetDeprecation(answer: Answer, link: string) {
  const deprecation = structuredFieldDate(answer.headers.deprecation);
  const sunset = imfFixdate(answer.headers.sunset);
  assert.equal(deprecation, GET_PET_SINCE);
  assert.equal(answer.headers.sunset, "Thu, 05 Dec 2030 00:00:00 GMT");
  assert.equal(sunset, GET_PET_SUNSET);
  assert.ok(deprecation <= sunset, "Deprecation is not after Sunset");
  assert.equal(answer.headers.link, link);
}

function assertNoLifecycleHeaders(answer: Answer, what: string) {
  assert.ok(LIFECYCLE_HEADERS.includes("deprecation") && LIFECYCLE_HEADERS.includes("x-api-stability"));
  for (const name of LIFECYCLE_HEADERS) {
    assert.equal(answer.headers[name], undefined, `${what} carries ${name}`);
  }
}

describe("getPet, deprecated in the real document, announces it on every answer", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      keys,
      config: { policies: { lifecycle: { documentationUrl: DOCS } } },
    });
  });
  after(() => gw.close());
  const link = `</v1/pets>; rel="successor-version", <${DOCS}>; rel="deprecation"`;

  test("a 200, a 404, a 400 and a HEAD of getPet carry Deprecation, Sunset and Link", async () => {
    const [pet] = (await request(`${gw.url}/pets?limit=1`, { key: acme })).json<{ id: number }[]>();
    const found = await request(`${gw.url}/pets/${pet?.id}`, { key: acme });
    assert.equal(found.status, 200);
    assertAnnouncesGetPetDeprecation(found, link);
    const missing = await request(`${gw.url}/pets/987654321`, { key: acme });
    assert.equal(missing.status, 404);
    assertAnnouncesGetPetDeprecation(missing, link);
    const invalid = await request(`${gw.url}/pets/abc`, { key: acme });
    assert.equal(invalid.status, 400);
    assertAnnouncesGetPetDeprecation(invalid, link);
    const head = await request(`${gw.url}/pets/${pet?.id}`, { key: acme, method: "HEAD" });
    assert.equal(head.status, 200);
    assertAnnouncesGetPetDeprecation(head, link);
  });

  test("a 401 of getPet carries them too: the client learns of the deprecation before it has a key", async () => {
    const withoutKey = await request(`${gw.url}/pets/1`);
    assert.equal(withoutKey.status, 401);
    assertAnnouncesGetPetDeprecation(withoutKey, link);
    const wrongKey = await request(`${gw.url}/pets/1`, { key: "not-a-key" });
    assert.equal(wrongKey.status, 401);
    assertAnnouncesGetPetDeprecation(wrongKey, link);
  });

  test("listPets and createPet carry no lifecycle header, whatever their status", async () => {
    assertNoLifecycleHeaders(await request(`${gw.url}/pets`, { key: acme }), "listPets 200");
    assertNoLifecycleHeaders(await request(`${gw.url}/pets`), "listPets 401");
    const created = await request(`${gw.url}/pets`, {
      key: acme,
      method: "POST",
      body: JSON.stringify({ name: "Pip", categoryId: 2 }),
    });
    assert.equal(created.status, 201);
    assertNoLifecycleHeaders(created, "createPet 201");
    assertNoLifecycleHeaders(
      await request(`${gw.url}/pets`, { key: acme, method: "POST", body: "{}" }),
      "createPet 400",
    );
    assertNoLifecycleHeaders(await request(`${gw.url}/cats`, { key: acme }), "an unrouted 404");
  });
});

// The calls are made once, before the tests; each test only reads what they left: side by side.
describe("who still calls getPet: the report, the metric and the log lines agree", {
  concurrency: true,
}, () => {
  let backend: BackendProcess;
  let gw: TestGateway;
  let clock = 0;
  const t0 = Date.parse("2030-11-01T08:00:00Z");
  const t1 = t0 + 3_600_000;
  const t2 = t0 + 2 * 86_400_000;
  const t3 = t2 + 1_800_000;
  let report: DeprecationReport;
  const requestIds: string[] = [];

  before(async () => {
    backend = await startDemoBackendProcess();
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      now: () => clock,
    });
    const call = async (key: string, at: number, userAgent: string, path = "/pets/1") => {
      clock = at;
      const requestId = `call-${requestIds.length + 1}`;
      requestIds.push(requestId);
      const answer = await request(`${gw.url}${path}`, {
        key,
        headers: { "user-agent": userAgent, "x-request-id": requestId },
      });
      assert.equal(answer.headers["x-request-id"], requestId);
      return answer;
    };
    for (let i = 0; i < 3; i++) await call(acme, t0 + i * 1000, "acme-sync/1.0");
    await call(globex, t1, "globex/2");
    await call(acme, t2, "acme-sync/1.1");
    await call(initech, t2, "initech-cron");
    await call(initech, t3, "initech-cron");
    // Not deprecated calls: a 401 is a rejection, listPets is not deprecated.
    clock = t3;
    assert.equal((await request(`${gw.url}/pets/1`, { key: "stolen?" })).status, 401);
    assert.equal((await request(`${gw.url}/pets`, { key: globex })).status, 200);
    const answer = await request(`${gw.opsUrl}/deprecations`);
    assert.equal(answer.status, 200);
    assert.match(String(answer.headers["content-type"]), /^application\/json/);
    report = answer.json<DeprecationReport>();
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("/deprecations lists each consumer with first seen, last seen, calls and last user agent", () => {
    assert.equal(report.generatedAt, new Date(t3).toISOString());
    // The gateway started at clock 0: its in-memory figures count from then.
    assert.equal(report.countingSince, new Date(0).toISOString());
    assert.equal(report.operations.length, 1);
    const getPet = report.operations[0];
    assert.deepEqual(getPet, {
      operation: "getPet",
      method: "GET",
      path: "/v1/pets/{petId}",
      since: "2026-01-01T00:00:00.000Z",
      sunset: "2030-12-05T00:00:00.000Z",
      successor: "GET /v1/pets",
      // 2030-11-03T08:30Z to 2030-12-05T00:00Z is 31.6 days: 32 days left, rounded up.
      daysToSunset: 32,
      calls: 7,
      forgottenCallers: 0,
      callers: [
        {
          consumer: "initech",
          firstSeen: new Date(t2).toISOString(),
          lastSeen: new Date(t3).toISOString(),
          calls: 2,
          lastUserAgent: "initech-cron",
        },
        {
          consumer: "acme",
          firstSeen: new Date(t0).toISOString(),
          lastSeen: new Date(t2).toISOString(),
          calls: 4,
          lastUserAgent: "acme-sync/1.1",
        },
        {
          consumer: "globex",
          firstSeen: new Date(t1).toISOString(),
          lastSeen: new Date(t1).toISOString(),
          calls: 1,
          lastUserAgent: "globex/2",
        },
      ],
    });
  });

  test("?format=csv gives one row per consumer for spreadsheets", async () => {
    const answer = await request(`${gw.opsUrl}/deprecations?format=csv`);
    assert.equal(answer.status, 200);
    assert.match(String(answer.headers["content-type"]), /^text\/csv/);
    assert.deepEqual(answer.body.trimEnd().split("\r\n"), [
      "operation,consumer,first_seen,last_seen,calls,last_user_agent,sunset,days_to_sunset,successor",
      `getPet,initech,${new Date(t2).toISOString()},${new Date(t3).toISOString()},2,initech-cron,2030-12-05T00:00:00.000Z,32,GET /v1/pets`,
      `getPet,acme,${new Date(t0).toISOString()},${new Date(t2).toISOString()},4,acme-sync/1.1,2030-12-05T00:00:00.000Z,32,GET /v1/pets`,
      `getPet,globex,${new Date(t1).toISOString()},${new Date(t1).toISOString()},1,globex/2,2030-12-05T00:00:00.000Z,32,GET /v1/pets`,
    ]);
  });

  test("the counter counts deprecated calls by operation and consumer, and nothing else", async () => {
    const samples = await scrape(gw);
    const calls = (consumer: string) =>
      sampleValue(samples, "gateway_deprecated_calls_total", { operation: "getPet", consumer });
    assert.equal(calls("acme"), 4);
    assert.equal(calls("globex"), 1);
    assert.equal(calls("initech"), 2);
    assert.equal(sampleValue(samples, "gateway_deprecated_calls_total"), 7);
  });

  test("the sunset gauge dates each deprecated operation's sunset in Unix seconds, and no other operation", async () => {
    const sunsets = (await scrape(gw)).filter(
      (sample) => sample.name === "gateway_deprecation_sunset_timestamp_seconds",
    );
    assert.deepEqual(
      sunsets.map(({ labels, value }) => ({ labels, value })),
      [{ labels: { operation: "getPet" }, value: GET_PET_SUNSET / 1000 }],
    );
  });

  test("each deprecated call writes one log line naming the caller, never the key", () => {
    const lines = gw.logs.messages("deprecated call");
    assert.equal(lines.length, 7);
    const first = lines[0] as Record<string, unknown>;
    assert.equal(first.operation, "getPet");
    assert.equal(first.consumer, "acme");
    assert.equal(first.calledAt, new Date(t0).toISOString());
    assert.equal(first.userAgent, "acme-sync/1.0");
    assert.equal(first.clientAddress, "127.0.0.1");
    assert.equal(first.reqId, "call-1");
    assert.equal(first.outcome, "served");
    assert.equal(first.sunset, "2030-12-05T00:00:00.000Z");
    assert.deepEqual(
      lines.map((line) => line.reqId),
      requestIds.slice(0, 7),
    );
    for (const raw of gw.logs.raw) {
      for (const { key } of keys.keys) assert.ok(!raw.includes(key), "a key reached the log");
      assert.ok(!raw.includes("stolen?"), "a presented key reached the log");
    }
  });

  test("the log command builds the same report from the captured log lines", async () => {
    const input = gw.logs.raw;
    const json = await runReportCommand(["--now", new Date(t3).toISOString()], input);
    assert.equal(json.code, 0, json.stderr);
    // Figure for figure; only the ops report knows since when its process counts.
    const { countingSince: _, ...figures } = report;
    assert.deepEqual(JSON.parse(json.stdout), figures);
    assert.match(json.stderr, /7 deprecated calls in \d+ log lines/);
    const csv = await runReportCommand(["--now", new Date(t3).toISOString(), "--format", "csv"], input);
    assert.equal(csv.stdout, (await request(`${gw.opsUrl}/deprecations?format=csv`)).body);
  });

  test("the log command reads files too, and lines from several replicas in any order", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-logs-"));
    const lines = gw.logs.raw.filter((line) => line.includes('"deprecated call"'));
    // Two replicas' files, interleaved out of order, with a collector's prefix on each line.
    writeFileSync(
      join(dir, "a.log"),
      `${lines
        .filter((_, i) => i % 2 === 0)
        .reverse()
        .join("\n")}\nnot json\n`,
    );
    writeFileSync(
      join(dir, "b.log"),
      `${lines
        .filter((_, i) => i % 2 === 1)
        .map((line) => `2030-11-03T08:30:00Z stdout F ${line}`)
        .join("\n")}\n`,
    );
    const result = await runReportCommand(
      ["--now", new Date(t3).toISOString(), join(dir, "a.log"), join(dir, "b.log")],
      [],
    );
    assert.equal(result.code, 0, result.stderr);
    const { countingSince: _, ...figures } = report;
    assert.deepEqual(JSON.parse(result.stdout), figures);
  });
});

describe("the road to sunset, on a fake clock", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let serving: TestGateway;
  let clock = Date.parse("2030-11-20T09:59:59Z");
  const brownout = { operation: "getPet", start: "2030-11-20T10:00:00Z", end: "2030-11-20T11:00:00Z" };
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave((req) => ({
      kind: "respond",
      status: 200,
      headers: { "content-type": "application/json" },
      body: req.url.startsWith("/v1/pets/") ? '{"id":1,"name":"Rex","categoryId":1}' : "[]",
    }));
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { policies: { lifecycle: { brownouts: [brownout] } } },
      now: () => clock,
    });
    serving = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { policies: { lifecycle: { afterSunset: "serve" } } },
      now: () => clock,
    });
  });
  after(async () => {
    await gw.close();
    await serving.close();
    await backend.close();
  });

  test("inside a brownout window getPet answers 410 naming the replacement, and is served again after", async () => {
    clock = Date.parse("2030-11-20T09:59:59Z");
    assert.equal((await request(`${gw.url}/pets/1`, { key: acme })).status, 200);
    const reached = backend.requests.length;
    clock = Date.parse("2030-11-20T10:30:00Z");
    const answer = await request(`${gw.url}/pets/1`, { key: globex });
    assert.equal(answer.status, 410);
    const body = answer.json<{ code: string; message: string; status: number }>();
    assert.equal(body.code, "OPERATION_BROWNOUT");
    assert.equal(body.status, 410);
    assert.ok(gw.gateway.api.validateError(body));
    assert.match(body.message, /scheduled brownout until Wed, 20 Nov 2030 11:00:00 GMT/);
    assert.match(body.message, /use GET \/v1\/pets \(GET \/pets with a status filter\) instead/);
    assert.equal(answer.headers["retry-after"], "Wed, 20 Nov 2030 11:00:00 GMT");
    assertAnnouncesGetPetDeprecation(answer, '</v1/pets>; rel="successor-version"');
    assert.equal(backend.requests.length, reached, "the backend saw the brownout call");
    // Other operations are not browned out.
    assert.equal((await request(`${gw.url}/pets`, { key: globex })).status, 200);
    clock = Date.parse("2030-11-20T11:00:00Z");
    assert.equal((await request(`${gw.url}/pets/1`, { key: acme })).status, 200);
  });

  test("a brownout answer is logged and counted like any deprecated call", async () => {
    clock = Date.parse("2030-11-20T10:45:00Z");
    const before = await scrape(gw);
    assert.equal((await request(`${gw.url}/pets/1`, { key: initech })).status, 410);
    const samples = await scrape(gw);
    const delta = (name: string, labels: Record<string, string>) =>
      sampleValue(samples, name, labels) - sampleValue(before, name, labels);
    assert.equal(delta("gateway_deprecated_calls_total", { operation: "getPet", consumer: "initech" }), 1);
    assert.equal(
      delta("gateway_rejections_total", {
        operation: "getPet",
        reason: "lifecycle",
        code: "OPERATION_BROWNOUT",
      }),
      1,
    );
    const line = gw.logs.messages("deprecated call").at(-1);
    assert.equal(line?.consumer, "initech");
    assert.equal(line?.outcome, "brownout");
    assert.equal(line?.calledAt, "2030-11-20T10:45:00.000Z");
  });

  test("from the sunset instant on getPet answers 410 OPERATION_SUNSET naming the replacement", async () => {
    clock = GET_PET_SUNSET - 1;
    assert.equal((await request(`${gw.url}/pets/1`, { key: acme })).status, 200);
    clock = GET_PET_SUNSET;
    const reached = backend.requests.length;
    const answer = await request(`${gw.url}/pets/1`, { key: acme });
    assert.equal(answer.status, 410);
    const body = answer.json<{ code: string; message: string; status: number }>();
    assert.ok(gw.gateway.api.validateError(body));
    assert.deepEqual(body, {
      code: "OPERATION_SUNSET",
      message:
        "GET /v1/pets/{petId} was removed on Thu, 05 Dec 2030 00:00:00 GMT; use GET /v1/pets (GET /pets with a status filter) instead",
      status: 410,
    });
    assertAnnouncesGetPetDeprecation(answer, '</v1/pets>; rel="successor-version"');
    assert.equal(backend.requests.length, reached, "the backend saw a call after the sunset");
    assert.equal(gw.logs.messages("deprecated call").at(-1)?.outcome, "sunset");
    const samples = await scrape(gw);
    assert.equal(
      sampleValue(samples, "gateway_rejections_total", { operation: "getPet", code: "OPERATION_SUNSET" }),
      1,
    );
    // The replacement itself keeps working.
    assert.equal((await request(`${gw.url}/pets?status=sold`, { key: acme })).status, 200);
    // A year later the report counts down below zero.
    clock = GET_PET_SUNSET + 365 * 86_400_000;
    const report = (await request(`${gw.opsUrl}/deprecations`)).json<DeprecationReport>();
    assert.equal(report.operations[0]?.daysToSunset, -365);
  });

  test("with afterSunset: serve the operation keeps answering past the sunset, with its headers", async () => {
    clock = GET_PET_SUNSET + 86_400_000;
    const answer = await request(`${serving.url}/pets/1`, { key: acme });
    assert.equal(answer.status, 200);
    assertAnnouncesGetPetDeprecation(answer, '</v1/pets>; rel="successor-version"');
    assert.equal(serving.logs.messages("deprecated call").at(-1)?.outcome, "served");
  });
});

describe("another document, another deprecated operation and stability markers, with no code change", () => {
  let backend: ProgrammableBackend;
  let staging: TestGateway;
  let production: TestGateway;
  let lenient: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave((req) =>
      req.method === "POST"
        ? {
            kind: "respond",
            status: 201,
            headers: { "content-type": "application/json" },
            body: '{"id":7,"name":"Pip","categoryId":2}',
          }
        : {
            kind: "respond",
            status: 200,
            // The listing pages with a Link of its own, which the gateway must keep.
            headers: /^\/v1\/pets(?:\?|$)/.test(req.url)
              ? { "content-type": "application/json", link: '</v1/pets?limit=20&after=9>; rel="next"' }
              : { "content-type": "application/json" },
            body: req.url.startsWith("/v1/pets/") ? '{"id":1,"name":"Rex","categoryId":1}' : "[]",
          },
    );
    const config = (lifecycle: Record<string, unknown> = {}) => ({
      openapi: NEXT_DOCUMENT,
      policies: { lifecycle },
    });
    staging = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: config(),
      environment: "staging",
    });
    production = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: config(),
      environment: "production",
    });
    lenient = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: config({ experimentalInProduction: "serve" }),
      environment: "production",
    });
  });
  after(async () => {
    await Promise.all([staging.close(), production.close(), lenient.close()]);
    await backend.close();
  });
  const newPet = JSON.stringify({ name: "Pip", categoryId: 2 });

  test("listPets, deprecated in the fixture, gets the headers from its extension; getPet gets none", async () => {
    for (const answer of [
      await request(`${staging.url}/pets`, { key: acme }),
      await request(`${staging.url}/pets`),
    ]) {
      assert.equal(structuredFieldDate(answer.headers.deprecation), Date.parse("2027-03-01T00:00:00Z"));
      assert.equal(answer.headers.sunset, "Mon, 30 Jun 2031 00:00:00 GMT");
      assert.ok(structuredFieldDate(answer.headers.deprecation) <= imfFixdate(answer.headers.sunset));
      const backendLink = answer.status === 200 ? '</v1/pets?limit=20&after=9>; rel="next", ' : "";
      assert.equal(answer.headers.link, `${backendLink}</v1/animals>; rel="successor-version"`);
    }
    assertNoLifecycleHeaders(await request(`${staging.url}/pets/1`, { key: acme }), "getPet");
    const report = (await request(`${staging.opsUrl}/deprecations`)).json<DeprecationReport>();
    assert.deepEqual(
      report.operations.map((section) => [section.operation, section.successor, section.calls]),
      [["listPets", "GET /v1/animals", 1]],
    );
  });

  test("in staging a beta and an experimental operation are served and say so in X-API-Stability", async () => {
    const beta = await request(`${staging.url}/animals`, { key: acme });
    assert.equal(beta.status, 200);
    assert.equal(beta.headers["x-api-stability"], "beta");
    assert.equal(beta.headers.deprecation, undefined);
    const experimental = await request(`${staging.url}/animals`, {
      key: globex,
      method: "POST",
      body: newPet,
    });
    assert.equal(experimental.status, 201);
    assert.equal(experimental.headers["x-api-stability"], "experimental");
    const unauthenticated = await request(`${staging.url}/animals`);
    assert.equal(unauthenticated.status, 401);
    assert.equal(unauthenticated.headers["x-api-stability"], "beta");
    const samples = await scrape(staging);
    const calls = (operation: string, stability: string, consumer: string) =>
      sampleValue(samples, "gateway_unstable_operation_calls_total", { operation, stability, consumer });
    assert.equal(calls("listAnimals", "beta", "acme"), 1);
    assert.equal(calls("createAnimal", "experimental", "globex"), 1);
    assert.equal(sampleValue(samples, "gateway_unstable_operation_calls_total"), 2);
  });

  test("in production the experimental operation answers 403 and is counted; the beta one is served", async () => {
    const reached = backend.requests.length;
    const refused = await request(`${production.url}/animals`, {
      key: initech,
      method: "POST",
      body: newPet,
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.headers["x-api-stability"], "experimental");
    const body = refused.json<{ code: string; message: string; status: number }>();
    assert.ok(production.gateway.api.validateError(body));
    assert.deepEqual(body, {
      code: "OPERATION_NOT_AVAILABLE",
      message: "POST /v1/animals is experimental and not available in production",
      status: 403,
    });
    assert.equal(backend.requests.length, reached, "the backend saw a refused experimental call");
    const beta = await request(`${production.url}/animals`, { key: initech });
    assert.equal(beta.status, 200);
    assert.equal(beta.headers["x-api-stability"], "beta");
    const samples = await scrape(production);
    assert.equal(
      sampleValue(samples, "gateway_unstable_operation_calls_total", {
        operation: "createAnimal",
        stability: "experimental",
        consumer: "initech",
      }),
      1,
    );
    assert.equal(
      sampleValue(samples, "gateway_rejections_total", {
        operation: "createAnimal",
        reason: "lifecycle",
        code: "OPERATION_NOT_AVAILABLE",
      }),
      1,
    );
  });

  test("production may serve experimental operations when the config says so", async () => {
    const answer = await request(`${lenient.url}/animals`, { key: acme, method: "POST", body: newPet });
    assert.equal(answer.status, 201);
    assert.equal(answer.headers["x-api-stability"], "experimental");
  });
});

describe("bounded memory", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let clock = Date.parse("2030-01-01T00:00:00Z");
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(() => ({
      kind: "respond",
      status: 200,
      headers: { "content-type": "application/json" },
      body: '{"id":1,"name":"Rex","categoryId":1}',
    }));
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { policies: { lifecycle: { maxTrackedCallers: 2, maxConsumerLabels: 1 } } },
      now: () => clock,
    });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("past maxTrackedCallers the least recently seen caller is forgotten, and the totals stay exact", async () => {
    for (const key of [acme, globex, initech, globex]) {
      clock += 60_000;
      assert.equal((await request(`${gw.url}/pets/1`, { key })).status, 200);
    }
    const [getPet] = (await request(`${gw.opsUrl}/deprecations`)).json<DeprecationReport>().operations;
    assert.equal(getPet?.calls, 4);
    assert.equal(getPet?.forgottenCallers, 1);
    assert.deepEqual(
      getPet?.callers.map((row) => [row.consumer, row.calls]),
      [
        ["globex", 2],
        ["initech", 1],
      ],
    );
  });

  test("past maxConsumerLabels further consumers are counted under consumer=_other", async () => {
    const samples = await scrape(gw);
    const calls = (consumer: string) =>
      sampleValue(samples, "gateway_deprecated_calls_total", { operation: "getPet", consumer });
    assert.equal(calls("acme"), 1);
    assert.equal(calls("_other"), 3);
    // The log lines still name every caller.
    assert.deepEqual(
      gw.logs.messages("deprecated call").map((line) => line.consumer),
      ["acme", "globex", "initech", "globex"],
    );
  });
});

describe("what a deprecated call's line and report say of the caller", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      // The test's peer is 127.0.0.1: trusted through a range, as an ingress's pod address would be.
      config: { server: { trustedProxies: ["127.0.0.0/8", "10.0.0.2", "10.20.0.0/16"] } },
    });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("the client address is the nearest X-Forwarded-For hop the trusted proxies did not add, not what the client claimed", async () => {
    await request(`${gw.url}/pets/1`, {
      key: acme,
      headers: { "x-forwarded-for": "198.51.100.9, 203.0.113.7, 10.0.0.2" },
    });
    assert.equal(gw.logs.messages("deprecated call").at(-1)?.clientAddress, "203.0.113.7");
  });

  test("trusted proxies given as ranges trust every address in them: the client is the first hop outside them", async () => {
    await request(`${gw.url}/pets/1`, {
      key: acme,
      headers: { "x-forwarded-for": "198.51.100.9, 203.0.113.7, 10.20.30.40, 10.0.0.2" },
    });
    assert.equal(gw.logs.messages("deprecated call").at(-1)?.clientAddress, "203.0.113.7");
    assert.equal(
      backend.requests.at(-1)?.headers["x-forwarded-for"],
      "198.51.100.9, 203.0.113.7, 10.20.30.40, 10.0.0.2, 127.0.0.1",
    );
  });

  test("a key pasted into the User-Agent reaches neither the line nor the report; the rest of the agent does", async () => {
    // The request's own key wherever it is, and any other run that looks like a key (24 or more
    // key characters with a letter): the run alone, what stands before it stays.
    const foreign = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA";
    for (const userAgent of [acme, `acme-sync/1.0 (${acme})`, `acme-sync/1.0 token=${foreign}`]) {
      await request(`${gw.url}/pets/1`, { key: acme, headers: { "user-agent": userAgent } });
      const report = await request(`${gw.opsUrl}/deprecations`);
      const line = gw.logs.messages("deprecated call").at(-1);
      for (const text of [JSON.stringify(line), report.body]) {
        for (const secret of [foreign, ...keys.keys.map(({ key }) => key)]) {
          assert.ok(!text.includes(secret), `a key reached ${text.slice(0, 200)}`);
        }
      }
    }
    assert.equal(gw.logs.messages("deprecated call").at(-1)?.userAgent, "acme-sync/1.0 token=[redacted]");
  });
});

describe("a document the lifecycle cannot honour stops start-up with a message naming the operation", () => {
  const real = JSON.parse(readFileSync(REAL_DOCUMENT, "utf8")) as {
    paths: Record<string, Record<string, Record<string, unknown>>>;
  };
  const dir = mkdtempSync(join(tmpdir(), "gw-doc-"));
  const documentWith = (
    name: string,
    change: (getPet: Record<string, unknown>, listPets: Record<string, unknown>) => void,
  ) => {
    const copy = structuredClone(real);
    change(
      copy.paths["/pets/{petId}"]?.get as Record<string, unknown>,
      copy.paths["/pets"]?.get as Record<string, unknown>,
    );
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify(copy));
    return file;
  };
  const refuses = async (openapi: string, pattern: RegExp, lifecycle: Record<string, unknown> = {}) => {
    await assert.rejects(
      startGateway({
        upstreamUrl: "http://127.0.0.1:9/v1",
        keys,
        config: { openapi, policies: { lifecycle } },
      }),
      pattern,
    );
  };
  const extension = (getPet: Record<string, unknown>) =>
    getPet["x-gateway-deprecation"] as Record<string, unknown>;

  test("since later than sunset", async () => {
    const file = documentWith("late-since", (getPet) => {
      extension(getPet).since = "2031-01-01T00:00:00Z";
    });
    await refuses(
      file,
      /operation getPet \(GET \/pets\/\{petId\}\): x-gateway-deprecation\.since \(2031-01-01T00:00:00Z\) is later than its sunset \(2030-12-05T00:00:00Z\)/,
    );
  });

  test("a sunset that is not a date, an unknown field, a successor that is not an operation", async () => {
    await refuses(
      documentWith("bad-sunset", (getPet) => {
        extension(getPet).sunset = "5 December 2030";
      }),
      /operation getPet .*x-gateway-deprecation\.sunset must match format "date-time"/,
    );
    await refuses(
      documentWith("unknown-field", (getPet) => {
        extension(getPet).removal = "2030-12-05T00:00:00Z";
      }),
      /operation getPet .*x-gateway-deprecation has an unknown field "removal"/,
    );
    await refuses(
      documentWith("bad-successor", (getPet) => {
        extension(getPet).successor = { method: "get", path: "/cats" };
      }),
      /operation getPet .*successor GET \/cats is not an operation of the document/,
    );
  });

  test("a date without deprecated, an unknown stability", async () => {
    await refuses(
      documentWith("not-deprecated", (getPet) => {
        delete getPet.deprecated;
      }),
      /operation getPet .*x-gateway-deprecation is given but the operation is not deprecated: true/,
    );
    await refuses(
      documentWith("alpha", (_getPet, listPets) => {
        listPets["x-stability"] = "alpha";
      }),
      /operation listPets .*x-stability must be one of experimental, beta, not "alpha"/,
    );
  });

  test("a brownout of an operation that is not deprecated, or that ends before it starts", async () => {
    await refuses(REAL_DOCUMENT, /brownouts\[0\]\.operation: listPets is not a deprecated operation/, {
      brownouts: [{ operation: "listPets", start: "2030-01-01T00:00:00Z", end: "2030-01-01T01:00:00Z" }],
    });
    await refuses(REAL_DOCUMENT, /brownouts\[0\]: end must be after start/, {
      brownouts: [{ operation: "getPet", start: "2030-01-01T01:00:00Z", end: "2030-01-01T00:00:00Z" }],
    });
  });
});

describe("deprecated: true with no date anywhere (a team's own document)", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ keys, config: { openapi: OWN_DOCUMENT } });
  });
  after(() => gw.close());

  test("is tracked with no Deprecation or Sunset header, and start-up names the config line that dates it", async () => {
    const answer = await request(`${gw.url}/pets/1`, { key: acme });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.deprecation, undefined, "RFC 9745 has no undated form");
    assert.equal(answer.headers.sunset, undefined);
    const [call] = gw.logs.messages("deprecated call");
    assert.equal(call?.operation, "getPet");
    assert.equal(call?.consumer, "acme");
    const report = (await request(`${gw.opsUrl}/deprecations`)).json<DeprecationReport>();
    assert.equal(report.operations[0]?.since, null);
    assert.equal(report.operations[0]?.calls, 1);
    const warnings = gw.logs.lines.filter((line) => line.warning === "deprecation-undated");
    assert.equal(warnings.length, 1);
    assert.deepEqual(warnings[0]?.fixes, [
      '"policies": {"lifecycle":{"operations":{"getPet":{"since":"<RFC 3339 date-time>","sunset":"<RFC 3339 date-time>"}}}}',
    ]);
  });
});

test("the log command dates a deprecation from --config when the document says only deprecated: true", async () => {
  const config = boundedConfigFile({
    policies: {
      lifecycle: {
        operations: { getPet: { since: "2026-02-01T00:00:00Z", sunset: "2031-01-01T00:00:00Z" } },
      },
    },
  });
  const line = JSON.stringify({
    level: "info",
    msg: "deprecated call",
    operation: "getPet",
    consumer: "acme",
    calledAt: "2030-12-01T00:00:00.000Z",
    userAgent: "acme-sync/2",
  });
  const { code, stdout, stderr } = await runReportCommand(
    ["--openapi", OWN_DOCUMENT, "--config", config, "--now", "2030-12-31T00:00:00Z"],
    [line],
  );
  assert.equal(code, 0, stderr);
  const [getPet] = (JSON.parse(stdout) as DeprecationReport).operations;
  assert.equal(getPet?.since, "2026-02-01T00:00:00.000Z");
  assert.equal(getPet?.sunset, "2031-01-01T00:00:00.000Z");
  assert.equal(getPet?.daysToSunset, 1);
  assert.equal(getPet?.calls, 1);
});

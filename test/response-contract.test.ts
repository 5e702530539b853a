import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import pino from "pino";
import policies from "../policies/index.ts";
import responseContract, { type ContractReport } from "../policies/response-contract/index.ts";
import { loadConfig, validateConfig } from "../src/config.ts";
import { catalogueOf } from "../src/errors.ts";
import { createMetrics, createStatusLabels } from "../src/metrics.ts";
import { loadApiDescription } from "../src/openapi.ts";
import type { PolicyInstance } from "../src/policy.ts";
import { DEFAULT_OPENAPI_FILE } from "../src/project-files.ts";
import { ConfigError } from "../src/startup-errors.ts";
import {
  type Behaviour,
  jsonAnswer,
  type ProgrammableBackend,
  startProgrammableBackend,
} from "./fixtures/programmable-backend.ts";
import { eventually } from "./support/eventually.ts";
import { type GatewayOnDemoBackend, startGateway, type TestGateway } from "./support/gateway.ts";
import { type Answer, request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { sampleValue, scrape } from "./support/metrics.ts";
import { OWN_DOCUMENT } from "./support/openapi-documents.ts";

const catalogueStatuses = Object.values(catalogueOf(policies)).map((entry) => entry.status);
const keys = writeKeysFile(["acme"]);
const { key } = keys;
const CAP = 32_768;
const VIOLATIONS = "gateway_contract_violations_total";
// The backend's answers by status: its 5xx and 429 are counted there, not as violations.
const UPSTREAM_ANSWERS = "http_client_request_duration_seconds_count";

const pet = (id: number, status = "available", name = `Pet ${id}`) => ({ id, name, categoryId: 1, status });
const pets = (count: number, status?: string) =>
  JSON.stringify(Array.from({ length: count }, (_, i) => pet(i + 1, status)));

interface WrongAnswer {
  readonly name: string;
  readonly method?: string;
  readonly path: string;
  readonly body?: string;
  readonly answer: Behaviour & { kind: "respond" };
  readonly operation: string;
  readonly rule: string;
  readonly pointer: string;
}

// What a deliberately wrong backend answers, and which promise of the interface each answer breaks.
const WRONG: readonly WrongAnswer[] = [
  {
    name: "a field of the wrong type",
    path: "/pets",
    answer: jsonAnswer(200, '[{"id":1,"name":"Rex","categoryId":"one","status":"available"}]'),
    operation: "listPets",
    rule: "schema:type",
    pointer: "/0/categoryId",
  },
  {
    name: "an animal without its id",
    path: "/pets/1",
    answer: jsonAnswer(200, '{"name":"Rex","categoryId":1}'),
    operation: "getPet",
    rule: "schema:required",
    pointer: "/id",
  },
  {
    name: "a created animal without an id",
    method: "POST",
    path: "/pets",
    body: '{"name":"Rex","categoryId":1}',
    answer: jsonAnswer(201, '{"name":"Rex","categoryId":1,"status":"available"}'),
    operation: "createPet",
    rule: "schema:required",
    pointer: "/id",
  },
  {
    name: "a 404 that is not an Error object",
    path: "/pets/99",
    answer: jsonAnswer(404, '{"error":"not found"}'),
    operation: "getPet",
    rule: "schema:required",
    pointer: "/code",
  },
  {
    name: "a 401 whose Error object says status 0 (the interface: status is the HTTP status)",
    path: "/pets",
    answer: jsonAnswer(401, '{"code":"UNAUTHORIZED","message":"no","status":0}'),
    operation: "listPets",
    rule: "error-status",
    pointer: "/status",
  },
  {
    name: "a 404 whose Error object says status 200",
    path: "/pets/99",
    answer: jsonAnswer(404, '{"code":"NOT_FOUND","message":"no such animal","status":200}'),
    operation: "getPet",
    rule: "error-status",
    pointer: "/status",
  },
  {
    name: "a status code the document does not declare (200 for a creation)",
    method: "POST",
    path: "/pets",
    body: '{"name":"Rex","categoryId":1}',
    answer: jsonAnswer(200, '{"id":5,"name":"Rex","categoryId":1}'),
    operation: "createPet",
    rule: "status",
    pointer: "",
  },
  {
    name: "150 animals for limit=20",
    path: "/pets?limit=20",
    answer: jsonAnswer(200, pets(150)),
    operation: "listPets",
    rule: "page-size",
    pointer: "/20",
  },
  {
    name: "21 animals when limit is omitted (the document's default is 20)",
    path: "/pets",
    answer: jsonAnswer(200, pets(21)),
    operation: "listPets",
    rule: "page-size",
    pointer: "/20",
  },
  {
    name: "101 animals for limit=500 (clamped to 100)",
    path: "/pets?limit=500",
    answer: jsonAnswer(200, pets(101)),
    operation: "listPets",
    rule: "page-size",
    pointer: "/100",
  },
  {
    name: "an animal of the wrong status for a status filter",
    path: "/pets?status=sold",
    answer: jsonAnswer(200, JSON.stringify([pet(1, "sold"), pet(2, "pending"), pet(3, "sold")])),
    operation: "listPets",
    rule: "filter",
    pointer: "/1/status",
  },
  {
    name: "another animal than the requested petId",
    path: "/pets/7",
    answer: jsonAnswer(200, '{"id":8,"name":"Rex","categoryId":1}'),
    operation: "getPet",
    rule: "identity",
    pointer: "/id",
  },
  {
    name: "an id that differs from petId only beyond 2^53",
    path: "/pets/9007199254740993",
    answer: jsonAnswer(200, '{"id":9007199254740992,"name":"Rex","categoryId":1}'),
    operation: "getPet",
    rule: "identity",
    pointer: "/id",
  },
  {
    name: "a POST answer that does not echo the name sent",
    method: "POST",
    path: "/pets",
    body: '{"name":"Rex","categoryId":3,"status":"pending"}',
    answer: jsonAnswer(201, '{"id":10,"name":"Max","categoryId":3,"status":"pending"}'),
    operation: "createPet",
    rule: "echo",
    pointer: "/name",
  },
  {
    name: "a POST answer that rounds an int64 categoryId (equal as doubles)",
    method: "POST",
    path: "/pets",
    body: '{"name":"Rex","categoryId":1234567890123456789}',
    answer: jsonAnswer(201, '{"id":11,"name":"Rex","categoryId":1234567890123456800}'),
    operation: "createPet",
    rule: "echo",
    pointer: "/categoryId",
  },
  {
    name: "a POST answer with another status than the one sent",
    method: "POST",
    path: "/pets",
    body: '{"name":"Rex","categoryId":3,"status":"sold"}',
    answer: jsonAnswer(201, '{"id":12,"name":"Rex","categoryId":3,"status":"available"}'),
    operation: "createPet",
    rule: "echo",
    pointer: "/status",
  },
  {
    name: "a gzip body that breaks the schema",
    path: "/pets/1",
    answer: jsonAnswer(200, '{"id":1,"name":7,"categoryId":1}', { gzip: true }),
    operation: "getPet",
    rule: "schema:type",
    pointer: "/name",
  },
  {
    name: "a body over the buffering cap",
    path: "/pets?limit=100",
    answer: jsonAnswer(
      200,
      JSON.stringify(Array.from({ length: 100 }, (_, i) => pet(i + 1, "available", "x".repeat(400)))),
    ),
    operation: "listPets",
    rule: "size",
    pointer: "",
  },
  {
    name: "invalid JSON",
    path: "/pets",
    answer: jsonAnswer(200, '[{"id":1,"name":"Rex",'),
    operation: "listPets",
    rule: "json",
    pointer: "",
  },
  {
    name: "a non-JSON answer where JSON is declared",
    path: "/pets/1",
    answer: { kind: "respond", status: 200, headers: { "content-type": "text/html" }, body: "<h1>Rex</h1>" },
    operation: "getPet",
    rule: "media-type",
    pointer: "",
  },
];

async function ask(gw: TestGateway, wrong: WrongAnswer, requestId: string): Promise<Answer> {
  return request(`${gw.url}${wrong.path}`, {
    key,
    method: wrong.method ?? "GET",
    headers: { "x-request-id": requestId },
    ...(wrong.body === undefined ? {} : { body: wrong.body }),
  });
}

async function driftReport(gw: TestGateway, query = ""): Promise<ContractReport> {
  const answer = await request(`${gw.opsUrl}/contract/violations${query}`);
  assert.equal(answer.status, 200);
  return answer.json<ContractReport>();
}

function violationLines(gw: TestGateway, requestId: string) {
  return gw.logs.messages("contract violation").filter((line) => line.reqId === requestId);
}

describe("a gateway in front of a deliberately wrong backend", () => {
  let backend: ProgrammableBackend;
  let enforcing: TestGateway;
  let reporting: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    const config = (mode: string) => ({
      server: { maxResponseBodyBytes: CAP },
      policies: { responseContract: { mode } },
    });
    enforcing = await startGateway({ upstreamUrl: backend.url, keys, config: config("enforce") });
    reporting = await startGateway({ upstreamUrl: backend.url, keys, config: config("report") });
  });
  after(async () => {
    await enforcing.close();
    await reporting.close();
    await backend.close();
  });

  describe("enforce: the client gets 502 UPSTREAM_CONTRACT_VIOLATION instead", () => {
    for (const [index, wrong] of WRONG.entries()) {
      test(`${wrong.name} → 502, counted and logged as rejected`, async () => {
        backend.behave(() => wrong.answer);
        const requestId = `enforce-${index}`;
        const labels = { operation: wrong.operation, rule: wrong.rule, mode: "enforce" };
        const before = sampleValue(await scrape(enforcing), VIOLATIONS, labels);
        const answer = await ask(enforcing, wrong, requestId);
        assert.equal(answer.status, 502, answer.body);
        const error = answer.json<{ code: string; message: string }>();
        assert.equal(error.code, "UPSTREAM_CONTRACT_VIOLATION");
        assert.ok(enforcing.gateway.api.validateError(error), "the 502 is the interface's Error object");
        assert.ok(
          error.message.includes(`(${wrong.rule} at ${wrong.pointer || "the answer"})`),
          error.message,
        );
        assert.equal(sampleValue(await scrape(enforcing), VIOLATIONS, labels), before + 1);
        const [line, ...more] = violationLines(enforcing, requestId);
        assert.equal(more.length, 0, "one log line per violation");
        assert.equal(line?.rule, wrong.rule);
        assert.equal(line?.pointer, wrong.pointer);
        assert.equal(line?.action, "rejected");
      });
    }
  });

  describe("report: the answer passes unchanged, and the violation is counted, logged and listed", () => {
    for (const [index, wrong] of WRONG.entries()) {
      test(`${wrong.name} → passes, with counter, log line and drift entry`, async () => {
        backend.behave(() => wrong.answer);
        const requestId = `report-${index}`;
        const labels = { operation: wrong.operation, rule: wrong.rule, mode: "report" };
        const before = sampleValue(await scrape(reporting), VIOLATIONS, labels);
        const answer = await ask(reporting, wrong, requestId);

        assert.equal(answer.status, wrong.answer.status);
        assert.equal(answer.body, wrong.answer.body, "the same body, decoded when it came compressed");
        assert.equal(answer.headers["content-type"], wrong.answer.headers?.["content-type"]);
        assert.equal(answer.headers["content-length"], String(Buffer.byteLength(String(wrong.answer.body))));
        assert.equal(answer.headers["content-encoding"], undefined);

        assert.equal(sampleValue(await scrape(reporting), VIOLATIONS, labels), before + 1);
        const lines = violationLines(reporting, requestId);
        assert.equal(lines.length, 1, JSON.stringify(lines));
        const line = lines[0] as Record<string, unknown>;
        assert.equal(line.level, "warn");
        assert.equal(line.operation, wrong.operation);
        assert.equal(line.rule, wrong.rule);
        assert.equal(line.pointer, wrong.pointer);
        assert.equal(line.mode, "report");
        assert.equal(line.action, "passed");
        assert.equal(typeof line.excerpt, "string");
        assert.ok((line.excerpt as string).length <= 80, String(line.excerpt));

        const drift = (await driftReport(reporting)).operations[wrong.operation];
        assert.ok(drift, `the report lists ${wrong.operation}`);
        assert.equal(drift.mode, "report");
        assert.ok((drift.byRule[wrong.rule] ?? 0) >= 1);
        const entry = drift.recent.find((d) => d.last.requestId === requestId);
        assert.ok(entry, JSON.stringify(drift.recent));
        assert.equal(entry.rule, wrong.rule);
        assert.equal(entry.last.pointer, wrong.pointer);
        assert.equal(entry.last.upstreamStatus, wrong.answer.status);
        assert.equal(entry, drift.recent[0], "the most recent violation is listed first");
      });
    }
  });

  test("a correct gzip answer passes decoded, with the Content-Length of what the client receives", async () => {
    const body = '{"id":1,"name":"Rex","categoryId":1,"status":"available"}';
    backend.behave(() => jsonAnswer(200, body, { gzip: true }));
    const before = backend.requests.length;
    const answer = await request(`${enforcing.url}/pets/1`, { key, headers: { "accept-encoding": "gzip" } });
    assert.equal(answer.status, 200);
    assert.equal(answer.body, body);
    assert.equal(answer.headers["content-length"], String(Buffer.byteLength(body)));
    assert.equal(answer.headers["content-encoding"], undefined);
    assert.equal(backend.requests[before]?.headers["accept-encoding"], "identity");
  });

  test("an answer that arrives in pieces is judged whole and reaches the client byte for byte", async () => {
    const names = ["Rex é", "犬 Hachikō", "🐕 Laika", "Ñandú"];
    const body = JSON.stringify(names.map((name, i) => pet(i + 1, "available", name)));
    const pieces = (text: string) => [text.slice(0, 20), text.slice(20, 70), text.slice(70)];
    backend.behave(() => ({ kind: "slow-body", status: 200, chunks: pieces(body), delayMs: 15 }));
    const passed = await request(`${enforcing.url}/pets`, { key });
    assert.equal(passed.status, 200);
    assert.equal(passed.body, body);
    assert.equal(passed.headers["content-length"], String(Buffer.byteLength(body)));
    // A break of the schema in the last piece is seen: the pieces are judged together.
    const broken = body.replace('"status":"available"}]', '"status":"lost"}]');
    backend.behave(() => ({ kind: "slow-body", status: 200, chunks: pieces(broken), delayMs: 15 }));
    const refused = await request(`${enforcing.url}/pets`, { key });
    assert.equal(refused.status, 502);
    assert.equal(JSON.parse(refused.body).code, "UPSTREAM_CONTRACT_VIOLATION");
  });

  for (const status of [503, 429]) {
    test(`a ${status} with Retry-After is an upstream fault: passed through, never a violation, counted once`, async () => {
      const body = `{"code":"BUSY","message":"try later","status":${status}}`;
      backend.behave(() =>
        jsonAnswer(status, body, { headers: { "content-type": "application/json", "retry-after": "7" } }),
      );
      for (const gw of [enforcing, reporting]) {
        // listPets declares neither: each is labelled by its number only if the gateway itself
        // answers with it (the catalogue's statuses), else by its class.
        const label = createStatusLabels(gw.gateway.api.operations, catalogueStatuses)(
          gw.gateway.api.operation("listPets"),
          status,
        );
        const labels = { operation: "listPets", http_response_status_code: label };
        const samples = await scrape(gw);
        const faults = sampleValue(samples, UPSTREAM_ANSWERS, labels);
        const violations = sampleValue(samples, VIOLATIONS);
        const answer = await request(`${gw.url}/pets`, {
          key,
          headers: { "x-request-id": `fault-${status}` },
        });
        assert.equal(answer.status, status);
        assert.equal(answer.headers["retry-after"], "7");
        assert.equal(answer.body, body);
        // The core counts a request once its answer has closed.
        await eventually(
          `the ${status} counted as an upstream answer and not as a violation`,
          async () => {
            const after = await scrape(gw);
            assert.equal(sampleValue(after, UPSTREAM_ANSWERS, labels), faults + 1);
            assert.equal(sampleValue(after, VIOLATIONS), violations);
            return after;
          },
          3000,
        );
        assert.equal(violationLines(gw, `fault-${status}`).length, 0);
      }
    });
  }

  test("a 304 to the client's own conditional request is HTTP caching, not drift", async () => {
    backend.behave(() => ({ kind: "respond", status: 304, headers: { etag: '"v1"' } }));
    const answer = await request(`${enforcing.url}/pets/1`, { key, headers: { "if-none-match": '"v1"' } });
    assert.equal(answer.status, 304);
    assert.equal(answer.headers.etag, '"v1"');
  });

  test("excerpts never carry key material, whatever the backend puts in its answer", async () => {
    backend.behave((req) =>
      req.url.endsWith("/2")
        ? jsonAnswer(200, `{"id":2,"name":"${key}","categoryId":`)
        : jsonAnswer(200, `{"id":1,"name":"${key}","secretToken":"hunter2hunter2","category":"cats"}`),
    );
    const missing = await request(`${reporting.url}/pets/1`, {
      key,
      headers: { "x-request-id": "redact-1" },
    });
    assert.equal(missing.status, 200, "report mode passes the answer itself on to its own client");
    await request(`${reporting.url}/pets/2`, { key, headers: { "x-request-id": "redact-2" } });
    const [first] = violationLines(reporting, "redact-1");
    const [second] = violationLines(reporting, "redact-2");
    assert.equal(first?.rule, "schema:required");
    assert.equal(first?.pointer, "/categoryId");
    assert.match(String(first?.excerpt), /"name":"\[redacted\]"/);
    assert.match(String(first?.excerpt), /"secretToken":"\[redacted\]"/);
    assert.match(String(first?.excerpt), /"category":"cats"/, "what is not secret stays readable");
    assert.equal(second?.rule, "json");
    assert.match(String(second?.excerpt), /\[redacted\]/);
    const logged = reporting.logs.raw.join("\n");
    const listed = (await request(`${reporting.opsUrl}/contract/violations`)).body;
    for (const text of [logged, listed]) {
      assert.ok(!text.includes(key), "the API key never appears");
      assert.ok(!text.includes("hunter2"), "a secret-named field never appears");
    }
  });

  test("the drift report lists one operation on request and refuses one it does not know", async () => {
    const one = await driftReport(reporting, "?operation=getPet");
    assert.deepEqual(Object.keys(one.operations), ["getPet"]);
    const unknown = await request(`${reporting.opsUrl}/contract/violations?operation=deletePet`);
    assert.equal(unknown.status, 404);
    // Names every plain object has are no operation either.
    for (const name of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      const inherited = await request(`${reporting.opsUrl}/contract/violations?operation=${name}`);
      assert.equal(inherited.status, 404, `${name}: ${inherited.body}`);
    }
  });

  test("the drift report's 404 for an operation it does not know is an Error object of the catalogue", async () => {
    const unknown = await request(`${reporting.opsUrl}/contract/violations?operation=deletePet`);
    assert.deepEqual(unknown.json(), { code: "NOT_FOUND", message: "No such operation", status: 404 });
    assert.ok(reporting.gateway.api.validateError(unknown.json()), unknown.body);
  });
});

describe("an answer too deep to read its integers exactly", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    gw = await startGateway({ upstreamUrl: backend.url, keys });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  // JSON.parse reads any depth, but with a reviver (the exact parse of ids beyond 2^53) it recurses.
  test("is checked like any other answer (no 500, no crash), for the identity and the echo rules alike", async () => {
    const deep = `${"[".repeat(200_000)}${"]".repeat(200_000)}`;
    const id = "9007199254740993";
    backend.behave(() => jsonAnswer(200, `{"id":${id},"name":"Rex","categoryId":1,"x":${deep}}`));
    assert.equal((await request(`${gw.url}/pets/${id}`, { key })).status, 200);
    backend.behave(() => jsonAnswer(201, `{"id":1,"name":"Rex","categoryId":${id},"x":${deep}}`));
    const body = `{"name":"Rex","categoryId":${id}}`;
    assert.equal((await request(`${gw.url}/pets`, { key, method: "POST", body })).status, 201);
    backend.behave(() => jsonAnswer(200, "[]"));
    assert.equal((await request(`${gw.url}/pets`, { key })).status, 200);
  });
});

describe("modes per operation", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: {
        policies: {
          responseContract: { mode: "off", operations: { getPet: "enforce" } },
        },
      },
    });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("an override enforces one operation while off leaves the others unread and uncounted", async () => {
    backend.behave(() => jsonAnswer(200, '{"id":"x"}'));
    const enforced = await request(`${gw.url}/pets/1`, { key });
    assert.equal(enforced.status, 502);
    const before = backend.requests.length;
    const ignored = await request(`${gw.url}/pets`, { key, headers: { "accept-encoding": "gzip" } });
    assert.equal(ignored.status, 200);
    assert.equal(ignored.body, '{"id":"x"}');
    assert.equal(backend.requests[before]?.headers["accept-encoding"], "gzip", "off: the body is not read");
    const samples = await scrape(gw);
    assert.equal(sampleValue(samples, VIOLATIONS, { operation: "getPet", mode: "enforce" }), 1);
    assert.equal(sampleValue(samples, VIOLATIONS, { operation: "listPets" }), 0);
    const report = await driftReport(gw);
    assert.equal(report.operations.getPet?.mode, "enforce");
    assert.equal(report.operations.listPets?.mode, "off");
    assert.equal(report.operations.listPets?.violations, 0);
  });
});

describe("report mode on a sample", () => {
  const ANSWERS = "gateway_contract_answers_total";
  // Every answer breaks the schema: each judged one is a violation, each unjudged one is not.
  const BROKEN = '[{"id":"x"}]';
  let backend: ProgrammableBackend;
  let sampled: TestGateway;
  let enforcing: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave((req) => jsonAnswer(200, req.url.startsWith("/v1/pets/") ? '{"id":"x"}' : BROKEN));
    sampled = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: {
        policies: {
          responseContract: { mode: "report", sample: 0.5, samples: { getPet: 0 } },
        },
      },
    });
    enforcing = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { policies: { responseContract: { mode: "enforce", sample: 0 } } },
    });
  });
  after(async () => {
    await sampled.close();
    await enforcing.close();
    await backend.close();
  });

  /** `count` requests, eight at a time; every answer's status. */
  const send = async (url: string, count: number) => {
    const statuses: number[] = [];
    let left = count;
    const worker = async () => {
      while (left > 0) {
        left--;
        statuses.push((await request(url, { key })).status);
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    return statuses;
  };

  test("sample 0.5 judges a random share of 400 answers, the rest pass unjudged, and the counts add up", async () => {
    const statuses = await send(`${sampled.url}/pets`, 400);
    assert.deepEqual(new Set(statuses), new Set([200]), "report mode: every answer passes");
    const samples = await scrape(sampled);
    const judged = sampleValue(samples, ANSWERS, { operation: "listPets", judged: "true" });
    const unjudged = sampleValue(samples, ANSWERS, { operation: "listPets", judged: "false" });
    assert.equal(judged + unjudged, 400);
    // Binomial(400, 0.5): 120 and 280 are 8 standard deviations out.
    assert.ok(judged >= 120 && judged <= 280, `${judged} of 400 judged`);
    assert.equal(sampleValue(samples, VIOLATIONS, { operation: "listPets" }), judged);
    const lines = sampled.logs.messages("request").filter((line) => line.operation === "listPets");
    assert.equal(
      lines.filter(
        (line) => (line.notes as { contractJudged?: boolean } | undefined)?.contractJudged === false,
      ).length,
      unjudged,
    );
  });

  test("sample 0 judges no answer: nothing held, no violation, each counted as passed unjudged", async () => {
    const statuses = await send(`${sampled.url}/pets/1`, 20);
    assert.deepEqual(new Set(statuses), new Set([200]));
    const samples = await scrape(sampled);
    assert.equal(sampleValue(samples, ANSWERS, { operation: "getPet", judged: "true" }), 0);
    assert.equal(sampleValue(samples, ANSWERS, { operation: "getPet", judged: "false" }), 20);
    assert.equal(sampleValue(samples, VIOLATIONS, { operation: "getPet" }), 0);
  });

  test("enforce judges every answer, whatever the sample says", async () => {
    const statuses = await send(`${enforcing.url}/pets`, 40);
    assert.deepEqual(new Set(statuses), new Set([502]));
    const samples = await scrape(enforcing);
    assert.equal(sampleValue(samples, ANSWERS, { operation: "listPets", judged: "true" }), 40);
    assert.equal(sampleValue(samples, ANSWERS, { operation: "listPets", judged: "false" }), 0);
  });

  test("sample 1, the default, judges every answer in report mode", async (t) => {
    const gw = await startGateway(
      {
        upstreamUrl: backend.url,
        keys,
        config: { policies: { responseContract: { mode: "report" } } },
      },
      t,
    );
    await send(`${gw.url}/pets`, 40);
    const samples = await scrape(gw);
    assert.equal(sampleValue(samples, ANSWERS, { operation: "listPets", judged: "true" }), 40);
    assert.equal(sampleValue(samples, ANSWERS, { operation: "listPets", judged: "false" }), 0);
  });

  test("a sample outside 0 to 1, or for an unknown operationId, stops start-up", async () => {
    for (const contract of [{ sample: 1.5 }, { sample: -0.1 }, { samples: { nope: 0.5 } }]) {
      await assert.rejects(
        startGateway({
          upstreamUrl: backend.url,
          keys,
          config: { policies: { responseContract: contract } },
        }),
        /sample/,
      );
    }
  });
});

describe("the drift report's memory", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: {
        policies: { responseContract: { mode: "report", recentPerOperation: 2 } },
      },
    });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("keeps the most recently seen distinct violations per operation, and counts all of them", async () => {
    const answers = [
      '[{"id":"1","name":"Rex","categoryId":1}]', // schema:type /0/id
      '[{"id":1,"name":2,"categoryId":1}]', // schema:type /0/name
      '[{"id":1,"name":"Rex","categoryId":1},{"id":2,"name":"Max","categoryId":"2"}]', // /1/categoryId
      '[{"id":1,"name":"Rex","categoryId":1},{"id":2,"name":"Max","categoryId":"2"}]', // same again
    ];
    for (const body of answers) {
      backend.behave(() => jsonAnswer(200, body));
      assert.equal((await request(`${gw.url}/pets`, { key })).status, 200);
    }
    const drift = (await driftReport(gw)).operations.listPets;
    assert.equal(drift?.violations, 4);
    assert.deepEqual(drift?.byRule, { "schema:type": 4 });
    assert.deepEqual(
      drift?.recent.map((d) => [d.where, d.count]),
      [
        ["/*/categoryId", 2],
        ["/*/name", 1],
      ],
    );
  });
});

describe("the drift report across worker processes", () => {
  test("parts from several workers merge into one report: counts add up, most recent first, still bounded", () => {
    const instance = (
      responseContract as unknown as { create(o: unknown, c: unknown): PolicyInstance }
    ).create(
      { mode: "report", operations: {}, sample: 1, samples: {}, recentPerOperation: 2, rules: {} },
      {
        api: loadApiDescription(DEFAULT_OPENAPI_FILE),
        logger: pino({ level: "silent" }),
        metrics: createMetrics({ defaultMetrics: false }),
        environment: "production",
        now: () => 0,
      },
    );
    const collect = instance.collectReports?.["/contract/violations"] as () => ContractReport;
    const report = responseContract.opsReports?.["/contract/violations"];
    assert.ok(report);
    const example = (requestId: string, at: string) => ({
      requestId,
      at,
      upstreamStatus: 200,
      pointer: "/0/id",
      message: "",
      excerpt: "",
      mode: "report" as const,
      action: "passed" as const,
    });
    const drift = (where: string, count: number, first: string, last: string, id: string) => ({
      rule: "schema:type",
      where,
      count,
      firstSeen: first,
      lastSeen: last,
      last: example(id, last),
    });
    const a: ContractReport = {
      operations: {
        listPets: {
          mode: "report",
          violations: 3,
          byRule: { "schema:type": 3 },
          recent: [drift("/*/id", 2, "2026-01-01T00:00:01Z", "2026-01-01T00:00:05Z", "a1")],
        },
      },
    };
    const b: ContractReport = {
      operations: {
        listPets: {
          mode: "report",
          violations: 4,
          byRule: { "schema:type": 3, "page-size": 1 },
          recent: [
            drift("/*/name", 1, "2026-01-01T00:00:09Z", "2026-01-01T00:00:09Z", "b1"),
            drift("/*/id", 2, "2026-01-01T00:00:00Z", "2026-01-01T00:00:07Z", "b2"),
            drift("/*/status", 1, "2026-01-01T00:00:02Z", "2026-01-01T00:00:02Z", "b3"),
          ],
        },
      },
    };
    const options = {
      mode: "report" as const,
      operations: {},
      sample: 1,
      samples: {},
      recentPerOperation: 2,
      rules: {},
    };
    const merged = (report.merge([a, b, collect()], options) as ContractReport).operations.listPets;
    assert.equal(merged?.violations, 7);
    assert.deepEqual(merged?.byRule, { "schema:type": 6, "page-size": 1 });
    assert.deepEqual(
      merged?.recent.map((d) => [d.where, d.count, d.firstSeen, d.last.requestId]),
      [
        ["/*/name", 1, "2026-01-01T00:00:09Z", "b1"],
        ["/*/id", 4, "2026-01-01T00:00:00Z", "b2"],
      ],
    );
    void instance.close?.();
  });
});

describe("a correct backend under enforce", () => {
  let gw: GatewayOnDemoBackend;
  before(async () => {
    gw = await startGateway({
      keys,
      config: { policies: { responseContract: { mode: "enforce" } } },
    });
  });
  after(() => gw.close());

  // Hop-by-hop headers belong to each connection; Date is the second each answer was written.
  const PER_CONNECTION = new Set(["connection", "keep-alive", "transfer-encoding", "date"]);
  const assertSameAnswer = (through: Answer, direct: Answer, what: string) => {
    assert.equal(through.status, direct.status, what);
    assert.equal(through.body, direct.body, what);
    for (const [name, value] of Object.entries(direct.headers)) {
      if (PER_CONNECTION.has(name)) continue;
      assert.equal(through.headers[name], value, `${what}: header ${name}`);
    }
    assert.ok(through.headers.date, `${what}: a Date header`);
  };

  test("every operation passes unchanged: same status, same body bytes, same end-to-end headers", async () => {
    // The demo backend takes any bearer token: the gateway in front of it checks the keys.
    const direct = (path: string, method = "GET") => request(`${gw.backend.url}${path}`, { key, method });
    const through = (path: string, method = "GET") => request(`${gw.url}${path}`, { key, method });
    const lists: [string, string][] = [
      ["/pets", "/pets?limit=20"],
      ["/pets?limit=2", "/pets?limit=2"],
      ["/pets?limit=500", "/pets?limit=100"],
      ["/pets?status=sold", "/pets?status=sold&limit=20"],
      ["/pets?status=pending&limit=1", "/pets?status=pending&limit=1"],
    ];
    for (const [asked, forwarded] of lists) {
      assertSameAnswer(await through(asked), await direct(forwarded), `GET ${asked}`);
      assertSameAnswer(await through(asked, "HEAD"), await direct(forwarded, "HEAD"), `HEAD ${asked}`);
    }
    // Animal 5 has a categoryId beyond 2^53: its bytes must survive exactly.
    for (const id of ["1", "5", "987654321"]) {
      assertSameAnswer(await through(`/pets/${id}`), await direct(`/pets/${id}`), `GET /pets/${id}`);
    }
    for (const body of [
      '{"name":"Biscuit","categoryId":7,"status":"pending"}',
      '{"name":"Crumb","categoryId":1234567890123456789}',
    ]) {
      const created = await request(`${gw.url}/pets`, { key, method: "POST", body });
      assert.equal(created.status, 201, created.body);
      const id = /"id":(\d+)/.exec(created.body)?.[1];
      const stored = await direct(`/pets/${id}`);
      assert.equal(created.body, stored.body, "the created animal, byte for byte");
      assert.equal(created.headers["content-length"], stored.headers["content-length"]);
      assertSameAnswer(await through(`/pets/${id}`), stored, `GET /pets/${id}`);
    }
    assert.equal(sampleValue(await scrape(gw), VIOLATIONS), 0);
    assert.equal(gw.logs.messages("contract violation").length, 0);
  });
});

describe("contract options", () => {
  test("the default mode is report, and CONTRACT_MODE switches it without touching the config file", () => {
    const defaults = validateConfig({}, policies).policies.responseContract as { mode: string };
    assert.equal(defaults.mode, "report");
    const fromEnv = loadConfig({ env: { CONTRACT_MODE: "enforce" }, policies }).policies.responseContract as {
      mode: string;
    };
    assert.equal(fromEnv.mode, "enforce");
  });

  test("a bad mode or an unknown operationId stops start-up, naming the field", async () => {
    assert.throws(
      () => validateConfig({ policies: { responseContract: { mode: "strict" } } }, policies),
      (error: Error) =>
        error instanceof ConfigError &&
        /\/policies\/responseContract\/mode must be one of/.test(error.message),
    );
    assert.throws(
      () => validateConfig({ policies: { responseContract: { operations: { getPet: "loud" } } } }, policies),
      ConfigError,
    );
    await assert.rejects(
      startGateway({
        upstreamUrl: "http://127.0.0.1:9/v1",
        keys,
        config: {
          policies: { responseContract: { operations: { getPett: "enforce" } } },
        },
      }),
      /policies\.responseContract\.operations\.getPett: getPett is not an operationId/,
    );
  });

  test("a rule in the document that names no parameter of its operation stops start-up", async () => {
    const document = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));
    document.paths["/pets"].get["x-gateway-response-rules"] = [
      { rule: "page-size", status: "200", parameter: "size" },
    ];
    const file = join(mkdtempSync(join(tmpdir(), "gw-openapi-")), "openapi.json");
    writeFileSync(file, JSON.stringify(document));
    await assert.rejects(
      startGateway({
        upstreamUrl: "http://127.0.0.1:9/v1",
        keys,
        config: { openapi: file },
      }),
      /x-gateway-response-rules\/0: size is not a parameter of listPets/,
    );
  });
});

describe("rules a team's own document does not state", () => {
  let backend: ProgrammableBackend;
  let inferred: TestGateway;
  let stated: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    const start = (responseContract: Record<string, unknown>) =>
      startGateway({
        upstreamUrl: backend.url,
        keys,
        config: { openapi: OWN_DOCUMENT, policies: { responseContract } },
      });
    inferred = await start({ mode: "enforce" });
    stated = await start({
      mode: "enforce",
      rules: { listPets: [{ rule: "page-size", status: "200", parameter: "limit" }] },
    });
  });
  after(async () => {
    await inferred.close();
    await stated.close();
    await backend.close();
  });

  test("an inferred rule is only reported under enforce; once stated in the config it is enforced", async () => {
    backend.behave(() => jsonAnswer(200, pets(3)));
    const passed = await request(`${inferred.url}/pets?limit=1`);
    assert.equal(passed.status, 200, "the inferred page-size rule does not refuse");
    assert.equal(passed.json<unknown[]>().length, 3);
    const samples = await scrape(inferred);
    assert.equal(
      sampleValue(samples, VIOLATIONS, { operation: "listPets", rule: "page-size", mode: "report" }),
      1,
    );
    assert.equal(sampleValue(samples, VIOLATIONS, { mode: "enforce" }), 0);
    const [line] = inferred.logs.messages("contract violation");
    assert.equal(line?.action, "passed");

    const refused = await request(`${stated.url}/pets?limit=1`);
    assert.equal(refused.status, 502);
    assert.match(refused.json<{ message: string }>().message, /page-size/);
  });

  test("the schema is still enforced where only the rules are inferred", async () => {
    backend.behave(() => jsonAnswer(200, '[{"id":"one","name":"Rex","categoryId":1}]'));
    assert.equal((await request(`${inferred.url}/pets`)).status, 502);
  });

  test("rules stated in the document and in the config for one operation stop start-up", async () => {
    await assert.rejects(
      startGateway({
        upstreamUrl: "http://127.0.0.1:9/v1",
        keys,
        config: {
          policies: { responseContract: { rules: { listPets: [] } } },
        },
      }),
      /policies\.responseContract\.rules\.listPets: listPets states its rules in the document \(x-gateway-response-rules\) too/,
    );
  });
});

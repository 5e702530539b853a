// Usage memory over real HTTP: what each consumer relies on, per operation, on the ops port behind
// the ops token (/usage), written to the logs as "usage" lines when the gateway stops, read by the
// change review, and asked at a reload whom a candidate breaks.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { UsageReport } from "../policies/usage/index.ts";
import { DEFAULT_OPENAPI_FILE } from "../src/project-files.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { writeDocumentFiles } from "./support/openapi-documents.ts";
import { runProgram } from "./support/processes.ts";
import { mountSecret } from "./support/secret-mount.ts";

const keys = writeKeysFile(["acme", "globex"]);
const { keyOf } = keys;
const token = randomBytes(32).toString("base64url");

describe("usage on the ops port and in the logs", () => {
  let gw: TestGateway;
  let stopped = false;
  before(async () => {
    const secret = mountSecret("token", `${token}\n`);
    gw = await startGateway({ keys, config: { opsTokenFile: secret.file } });
    const call = (path: string, key?: string) =>
      request(`${gw.url}${path}`, key === undefined ? {} : { key });
    assert.equal((await call("/pets?status=sold&limit=5", keyOf("acme"))).status, 200);
    assert.equal((await call("/pets?status=sold", keyOf("acme"))).status, 200);
    // No limit sent: the limit policy defaults one, which is not the client's.
    assert.equal((await call("/pets", keyOf("globex"))).status, 200);
    assert.equal((await call("/pets/999999", keyOf("acme"))).status, 404);
    assert.equal((await call("/pets")).status, 401);
  });
  after(async () => {
    if (!stopped) await gw.close();
  });

  test("/usage needs the ops token", async () => {
    assert.equal((await request(`${gw.opsUrl}/usage`)).status, 401);
  });

  test("/usage lists each consumer's calls, query names and enum values sent, and statuses received", async () => {
    const answer = await request(`${gw.opsUrl}/usage`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(answer.status, 200);
    const report = answer.json<UsageReport & { rowsMatching: number }>();
    const rows = Object.fromEntries(
      report.rows.map(({ consumer, operation, calls, parameters, values, statuses }) => [
        `${consumer} ${operation}`,
        { calls, parameters, values, statuses },
      ]),
    );
    assert.deepEqual(rows, {
      "acme listPets": {
        calls: 2,
        parameters: ["limit", "status"],
        values: { status: ["sold"] },
        statuses: ["200"],
      },
      "acme getPet": { calls: 1, parameters: [], values: {}, statuses: ["404"] },
      "globex listPets": { calls: 1, parameters: [], values: {}, statuses: ["200"] },
      "(no consumer) listPets": { calls: 1, parameters: [], values: {}, statuses: ["401"] },
    });
    assert.equal(report.evicted, 0);
    const acme = await request(`${gw.opsUrl}/usage?consumer=acme&operation=getPet`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.deepEqual(
      acme.json<UsageReport>().rows.map((row) => [row.consumer, row.operation]),
      [["acme", "getPet"]],
    );
  });

  test("a stopping gateway writes one usage line per consumer and operation called", async () => {
    await gw.close();
    stopped = true;
    const lines = gw.logs.lines.filter((line) => line.msg === "usage");
    assert.deepEqual(lines.map((line) => [line.consumer, line.operation, line.calls]).sort(), [
      ["(no consumer)", "listPets", 1],
      ["acme", "getPet", 1],
      ["acme", "listPets", 2],
      ["globex", "listPets", 1],
    ]);
  });

  test("npm run usage merges the usage lines of every replica: calls summed, names united", async () => {
    if (!stopped) {
      await gw.close();
      stopped = true;
    }
    // Two replicas that served the same calls, and a line that only looks like one.
    const lines = [...gw.logs.raw, ...gw.logs.raw, '{"msg":"usage","consumer":"x"}', "not json"];
    const { code, stdout, stderr } = await runProgram(["scripts/usage.ts"], {
      stdin: `${lines.join("\n")}\n`,
    });
    assert.equal(code, 0, stderr);
    const merged = JSON.parse(stdout) as { usageLines: number; rows: UsageReport["rows"] };
    assert.equal(merged.usageLines, 8);
    assert.deepEqual(
      merged.rows.map(({ consumer, operation, calls, parameters, statuses }) => [
        operation,
        consumer,
        calls,
        parameters,
        statuses,
      ]),
      [
        ["getPet", "acme", 2, [], ["404"]],
        ["listPets", "(no consumer)", 2, [], ["401"]],
        ["listPets", "acme", 4, ["limit", "status"], ["200"]],
        ["listPets", "globex", 2, [], ["200"]],
      ],
    );
  });

  test("the change review reads a real gateway's usage lines: who sent a value the candidate removes", async () => {
    if (!stopped) {
      await gw.close();
      stopped = true;
    }
    const usageLines = gw.logs.raw.filter((line) => line.includes('"msg":"usage"'));
    const document = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));
    document.components.schemas.PetStatus.enum = ["available", "pending"];
    const folder = writeDocumentFiles({
      "candidate.json": document,
      "usage.log": `${usageLines.join("\n")}\n`,
    });
    const { code, stdout, stderr } = await runProgram([
      "scripts/plan.ts",
      "--against",
      join(folder, "candidate.json"),
      "--logs",
      join(folder, "usage.log"),
    ]);
    assert.equal(code, 1, stderr);
    assert.match(stdout, /usage lines in the 30 days/);
    assert.match(
      stdout,
      /query parameter status: the value "sold" is removed \[request\]\n {6}acme: 2 calls, last today\n/,
    );
  });
});

describe("at a reload, the change review is logged as advice", () => {
  let gw: TestGateway;
  let file: string;
  before(async () => {
    file = join(
      writeDocumentFiles({ "openapi.json": readFileSync(DEFAULT_OPENAPI_FILE, "utf8") }),
      "openapi.json",
    );
    // Every answer sampled: the members each consumer received are known.
    gw = await startGateway({
      keys,
      config: { openapi: file, policies: { usage: { sampleAnswers: 1 } } },
    });
    assert.equal((await request(`${gw.url}/pets?status=sold`, { key: keyOf("acme") })).status, 200);
    assert.equal((await request(`${gw.url}/pets`, { key: keyOf("globex") })).status, 200);
    const pet = JSON.stringify({ name: "Rex", categoryId: 1, status: "sold" });
    assert.equal(
      (await request(`${gw.url}/pets`, { key: keyOf("globex"), method: "POST", body: pet })).status,
      201,
    );
  });

  test("/usage lists the request-body members sent, as pointers, and the enum member's values", async () => {
    const report = (await request(`${gw.opsUrl}/usage?operation=createPet`)).json<UsageReport>();
    assert.deepEqual(
      report.rows.map(({ consumer, members, memberValues }) => [consumer, members, memberValues]),
      [["globex", ["/name", "/categoryId", "/status"], { "/status": ["sold"] }]],
    );
  });
  after(async () => {
    await gw.close();
  });

  test("a breaking candidate is refused, and the advice names who sent what it removes", async () => {
    const document = JSON.parse(readFileSync(file, "utf8"));
    document.components.schemas.PetStatus.enum = ["available", "pending"];
    writeFileSync(file, JSON.stringify(document));
    const outcome = await gw.gateway.document.reload("test");
    assert.equal(outcome.result, "refused");
    const [advice, ...more] = gw.logs.lines.filter((line) => line.msg === "document change review");
    assert.deepEqual(more, []);
    assert.equal(advice?.level, "warn");
    assert.equal(advice?.policy, "usage");
    const lines = advice?.advice as string[];
    assert.ok(
      lines.includes(
        'listPets (GET /pets): query parameter status: the value "sold" is removed: acme: 1 call, last today',
      ),
      lines.join("\n"),
    );
    // Only the usage memory holds what a body sent: the review names who sent "sold" in one.
    assert.ok(
      lines.includes(
        'createPet (POST /pets): request body application/json at /status: the value "sold" is removed: globex: 1 call, last today',
      ),
      lines.join("\n"),
    );
  });

  test("an answer member removed names who received it on sampled answers", async () => {
    const document = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));
    document.components.schemas.Pet.required = ["id", "categoryId"];
    delete document.components.schemas.Pet.properties.name;
    writeFileSync(file, JSON.stringify(document));
    assert.equal((await gw.gateway.document.reload("test")).result, "refused");
    const advice = gw.logs.lines.filter((line) => line.msg === "document change review").at(-1)
      ?.advice as string[];
    assert.deepEqual(advice, [
      "listPets (GET /pets): response 200: removes the member /-/name: received on sampled answers (or none of theirs was sampled): globex: 1 call, last today; acme: 1 call, last today",
      "createPet (POST /pets): response 201: removes the member /name: received on sampled answers (or none of theirs was sampled): globex: 1 call, last today",
      "getPet (GET /pets/{petId}): response 200: removes the member /name: no consumer received it on the answers sampled in 1 day",
    ]);
  });
});

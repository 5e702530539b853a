// Decision mode with WORKERS=2, started as `npm start` runs it: the primary hands the proxy's
// decision calls to both workers, merges what they counted (metrics, /deprecations), reloads the
// key file and the document for both, and replaces a worker that dies, decisions going on.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { DEFAULT_OPENAPI_FILE } from "../../src/project-files.ts";
import { eventually } from "../support/eventually.ts";
import { type Answer, request } from "../support/http.ts";
import { type KeysFile, writeKeysFile, writeKeysFileAt } from "../support/keys.ts";
import { type Sample, sampleValue, scrape } from "../support/metrics.ts";
import { writeDocumentFiles } from "../support/openapi-documents.ts";
import { type GatewayProcess, startGatewayProcess } from "../support/processes.ts";

const PET_STORE = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));

const linesOf = (gateway: GatewayProcess, msg: string) => gateway.lines.filter((line) => line.msg === msg);
const pidsOf = (lines: readonly Record<string, unknown>[]) => new Set(lines.map((line) => line.pid));
const decided = (samples: readonly Sample[], operation: string, status: string) =>
  sampleValue(samples, "http_server_request_duration_seconds_count", {
    operation,
    http_response_status_code: status,
  });
const deprecatedCounted = (samples: readonly Sample[]) =>
  samples
    .filter((sample) => sample.name === "gateway_deprecated_calls_total")
    .reduce((sum, sample) => sum + sample.value, 0);

/** nginx's call for an original request, as its generated config makes it, on a connection of its own. */
function decide(gateway: GatewayProcess, uri: string, key: string | undefined): Promise<Answer> {
  return request(`${gateway.origin}/decide/nginx`, {
    headers: {
      "x-original-method": "GET",
      "x-original-uri": uri,
      "x-forwarded-for": "203.0.113.9",
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
    },
  });
}

/** `count` decisions, four at a time, each on its own connection so the primary spreads them. */
async function decideEach(
  gateway: GatewayProcess,
  count: number,
  uri: string,
  key: string | undefined,
): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let i = 0; i < count; i += 4) {
    const batch = Array.from({ length: Math.min(4, count - i) }, () => decide(gateway, uri, key));
    answers.push(...(await Promise.all(batch)));
  }
  return answers;
}

const statuses = (answers: readonly Answer[]) => answers.map((answer) => answer.status);
const allAre = (answers: readonly Answer[], status: number) =>
  assert.deepEqual(
    statuses(answers).filter((s) => s !== status),
    [],
  );

/** getPet's calls in the primary's merged /deprecations report. */
async function deprecatedCallsReported(gateway: GatewayProcess): Promise<number> {
  const answer = await request(`${gateway.opsUrl}/deprecations`);
  assert.equal(answer.status, 200);
  const report = answer.json<{ operations: { operation: string; calls: number }[] }>();
  return report.operations.find((operation) => operation.operation === "getPet")?.calls ?? 0;
}

describe("GATEWAY_MODE=decision with WORKERS=2", () => {
  let gateway: GatewayProcess;
  let keys: KeysFile;
  let documentFile: string;
  before(async () => {
    keys = writeKeysFile(["alice", "bob"]);
    // Bob is added later, by a reload.
    writeKeysFileAt(keys.file, [{ consumer: "alice", key: keys.keyOf("alice") }]);
    documentFile = join(writeDocumentFiles({ "openapi.json": PET_STORE }), "openapi.json");
    gateway = await startGatewayProcess({
      GATEWAY_MODE: "decision",
      WORKERS: "2",
      GATEWAY_CONFIG: "",
      API_KEYS_FILE: keys.file,
      OPENAPI_FILE: documentFile,
    });
    // Starting workers takes seconds on a busy machine: a loose bound, only against a hang.
    await eventually(
      "both workers listening",
      () => linesOf(gateway, "worker listening").length >= 2,
      20_000,
    );
  });
  after(async () => {
    await gateway.stop("SIGKILL");
  });

  test("both workers decide, one access line each, and the scraped totals grow by what was asked", async () => {
    const before = await scrape(gateway);
    const linesBefore = linesOf(gateway, "request").length;
    const allowed = await decideEach(gateway, 40, "/v1/pets?limit=1000", keys.keyOf("alice"));
    allAre(allowed, 200);
    for (const answer of allowed) {
      assert.equal(answer.headers["x-gateway-upstream-uri"], "/pets?limit=100");
      assert.equal(answer.headers["x-gateway-upstream-x-consumer"], "alice");
    }
    // nginx's door carries every refusal as 403.
    const refused = await decideEach(gateway, 6, "/v1/pets", undefined);
    allAre(refused, 403);
    const samples = await scrape(gateway);
    assert.equal(decided(samples, "listPets", "200") - decided(before, "listPets", "200"), 40);
    assert.equal(decided(samples, "listPets", "401") - decided(before, "listPets", "401"), 6);
    assert.equal(sampleValue(samples, "gateway_workers"), 2);
    await gateway.waitFor(() => linesOf(gateway, "request").length >= linesBefore + 46);
    const lines = linesOf(gateway, "request").slice(linesBefore);
    assert.ok(lines.every((line) => line.decidedFor === "nginx"));
    assert.equal(pidsOf(lines).size, 2, "both workers decided");
  });

  test("deprecated calls decided by either worker are counted once, in /deprecations and the metric", async () => {
    const [reportedBefore, before] = [await deprecatedCallsReported(gateway), await scrape(gateway)];
    const linesBefore = linesOf(gateway, "deprecated call").length;
    const answers = await decideEach(gateway, 12, "/v1/pets/7", keys.keyOf("alice"));
    allAre(answers, 200);
    assert.ok(answers.every((answer) => answer.headers.deprecation !== undefined));
    assert.equal(await deprecatedCallsReported(gateway), reportedBefore + 12);
    assert.equal(deprecatedCounted(await scrape(gateway)) - deprecatedCounted(before), 12);
    await gateway.waitFor(() => linesOf(gateway, "deprecated call").length >= linesBefore + 12);
    const lines = linesOf(gateway, "deprecated call").slice(linesBefore);
    assert.equal(lines.length, 12);
    assert.equal(pidsOf(lines).size, 2, "both workers decided deprecated calls");
  });

  test("a key added to the file and SIGHUP to the primary: both workers allow it", async () => {
    const bob = keys.keyOf("bob");
    allAre(await decideEach(gateway, 4, "/v1/pets", bob), 403);
    writeKeysFileAt(keys.file, keys.keys);
    gateway.child.kill("SIGHUP");
    // Every worker has it once 8 decisions in a row, spread over both, allow it.
    await eventually("both workers allow the new key", async () => {
      allAre(await decideEach(gateway, 8, "/v1/pets", bob), 200);
      return true;
    });
  });

  test("a changed document is committed for both workers: every decision follows the new version", async () => {
    const next = structuredClone(PET_STORE);
    next.info.version = "1.1.0";
    next.paths["/pets"].get.parameters[0].schema.maximum = 200;
    writeFileSync(documentFile, JSON.stringify(next));
    await gateway.waitFor((line) => line.msg === "document reloaded", 15_000);
    const answers = await decideEach(gateway, 12, "/v1/pets?limit=1000", keys.keyOf("alice"));
    allAre(answers, 200);
    assert.deepEqual(
      [...new Set(answers.map((answer) => answer.headers["x-gateway-upstream-uri"]))],
      ["/pets?limit=200"],
    );
    const versions = (await scrape(gateway))
      .filter((sample) => sample.name === "gateway_document_info")
      .map((sample) => sample.labels.version);
    assert.deepEqual(versions, ["1.1.0"]);
  });

  test("a worker killed is replaced, decisions go on meanwhile, and no total goes down", async () => {
    const before = await scrape(gateway);
    const reportedBefore = await deprecatedCallsReported(gateway);
    const known = new Set(linesOf(gateway, "worker listening").map((line) => line.worker));
    const victim = Number([...known].at(-1));
    process.kill(victim, "SIGKILL");
    await gateway.waitFor(
      (line) => line.msg === "worker exited; starting a new one" && line.worker === victim,
    );
    // The other worker decides while the new one starts.
    allAre(await decideEach(gateway, 8, "/v1/pets", keys.keyOf("alice")), 200);
    const replacement = await gateway.waitFor(
      (line) => line.msg === "worker listening" && !known.has(line.worker),
    );
    // The new worker has the committed document and the reloaded keys.
    await eventually(
      "the new worker decides",
      async () => {
        const linesBefore = linesOf(gateway, "request").length;
        const answers = await decideEach(gateway, 8, "/v1/pets?limit=1000", keys.keyOf("bob"));
        allAre(answers, 200);
        assert.ok(answers.every((answer) => answer.headers["x-gateway-upstream-uri"] === "/pets?limit=200"));
        await gateway.waitFor(() => linesOf(gateway, "request").length >= linesBefore + 8);
        return pidsOf(linesOf(gateway, "request").slice(linesBefore)).has(replacement.worker);
      },
      10_000,
    );
    allAre(await decideEach(gateway, 4, "/v1/pets/8", keys.keyOf("alice")), 200);
    const samples = await scrape(gateway);
    assert.ok(decided(samples, "listPets", "200") >= decided(before, "listPets", "200") + 16);
    assert.equal(decided(samples, "listPets", "401"), decided(before, "listPets", "401"));
    assert.equal(
      sampleValue(samples, "gateway_worker_restarts_total") -
        sampleValue(before, "gateway_worker_restarts_total"),
      1,
    );
    assert.equal(sampleValue(samples, "gateway_workers"), 2);
    // The dead worker's deprecated calls stay in the report; the new ones join them.
    assert.equal(await deprecatedCallsReported(gateway), reportedBefore + 4);
  });
});

// WORKERS=2: the primary reads the changed document once, both workers prepare it, and it is
// committed for both at once: after the commit no scrape shows two versions, nor the old one. A
// worker started later serves the committed bytes and never reads the files (here broken on disk).
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { DEFAULT_OPENAPI_FILE } from "../../src/project-files.ts";
import { eventually } from "../support/eventually.ts";
import { startGatewayProgram, type TestGatewayProgram } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { type Sample, scrape } from "../support/metrics.ts";
import { writeDocumentFiles } from "../support/openapi-documents.ts";

const PET_STORE = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));
const versionsIn = (samples: readonly Sample[]) =>
  samples.filter((sample) => sample.name === "gateway_document_info").map((sample) => sample.labels.version);

let gateway: TestGatewayProgram;
let file: string;
let key: string;
before(async () => {
  file = join(writeDocumentFiles({ "openapi.json": PET_STORE }), "openapi.json");
  gateway = await startGatewayProgram({ env: { WORKERS: "2", OPENAPI_FILE: file } });
  key = gateway.key;
  await eventually(
    "both workers listening",
    () => gateway.lines.filter((line) => line.msg === "worker listening").length >= 2,
    20_000,
  );
});
after(async () => {
  await gateway.stop("SIGKILL");
});

test("a changed document is committed for both workers at once: no scrape after the commit shows two versions", async () => {
  assert.deepEqual(versionsIn(await scrape(gateway)), ["1.0.0"]);
  const next = structuredClone(PET_STORE);
  next.info.version = "1.1.0";
  next.paths["/pets"].get.parameters[0].schema.maximum = 200;
  writeFileSync(file, JSON.stringify(next));
  await gateway.waitFor((line) => line.msg === "document reloaded", 15_000);
  // Every scrape from now on: the new version, once.
  for (let i = 0; i < 20; i++) {
    assert.deepEqual(versionsIn(await scrape(gateway)), ["1.1.0"], `scrape ${i}`);
  }
  const reloaded = gateway.lines.filter((line) => line.msg === "document reloaded");
  assert.equal(reloaded.length, 1, "said once, by the primary");
  assert.deepEqual(reloaded[0]?.differences, [
    "listPets: query parameter limit: maximum goes from 100 to 200",
  ]);
  const counted = (await scrape(gateway)).filter(
    (sample) => sample.name === "gateway_document_reloads_total" && sample.labels.result === "ok",
  );
  assert.deepEqual(
    counted.map((sample) => sample.value),
    [1],
    "one reload, not one per worker",
  );
});

test("a broken candidate is refused for all; a worker started later serves the committed bytes", async () => {
  writeFileSync(file, "{ broken");
  await gateway.waitFor(
    (line) => line.msg === "document reload refused; the running version keeps serving",
    15_000,
  );
  const pids = gateway.lines.filter((line) => line.msg === "worker listening").map((line) => line.worker);
  process.kill(pids[0] as number, "SIGKILL");
  await eventually(
    "a new worker listening",
    () => gateway.lines.filter((line) => line.msg === "worker listening").length >= 3,
    20_000,
  );
  for (let i = 0; i < 10; i++) {
    assert.deepEqual(versionsIn(await scrape(gateway)), ["1.1.0"], `scrape ${i}`);
    assert.equal((await request(`${gateway.origin}/v1/pets`, { key })).status, 200);
  }
});

// /metrics as a scraper reads it, behind a backend that answers with any status it likes.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, test } from "node:test";
import { errorCatalogue } from "../../src/index.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "../fixtures/programmable-backend.ts";
import { startGateway, type TestGateway } from "../support/gateway.ts";
import { answerOf } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { type Sample, scrape } from "../support/metrics.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;
const HISTOGRAMS = ["http_server_request_duration_seconds", "http_client_request_duration_seconds"];
// Every final status a backend can give in the range that has classes.
const STATUSES = Array.from({ length: 400 }, (_, index) => 200 + index);
// What listPets declares in config/openapi.json, and what the gateway itself answers with.
const LIST_PETS_DECLARES = [200, 401];
const GATEWAY_ANSWERS = new Set(Object.values(errorCatalogue).map((entry) => entry.status));
const CLASSES = ["2xx", "3xx", "4xx", "5xx"];

// fetch would refuse a 407 and follow a 3xx: Node's client shows every status as it came.
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

let backend: ProgrammableBackend;
let gw: TestGateway;
before(async () => {
  backend = await startProgrammableBackend();
  // The status the client asks for, with no body: only the status is the point here.
  backend.behave((req) => ({ kind: "respond", status: Number(req.headers["x-answer-status"]), body: "" }));
  gw = await startGateway({ upstreamUrl: backend.url, keys });
});
after(async () => {
  agent.destroy();
  await gw.close();
  await backend.close();
});

function statusFromBackend(status: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${key}`, "x-answer-status": String(status) };
    http
      .get(`${gw.url}/pets`, { agent, headers }, (res) =>
        answerOf(res).then((a) => resolve(a.status), reject),
      )
      .on("error", reject);
  });
}

/** Every series of the two HTTP histograms: one per label set, buckets and sum included. */
function httpSeries(samples: readonly Sample[]): Sample[] {
  return samples.filter((sample) => HISTOGRAMS.some((name) => sample.name.startsWith(`${name}_`)));
}

test("a backend answering 400 different statuses adds series by class, not one per status", async () => {
  const seriesBefore = httpSeries(await scrape(gw)).length;
  // Kept-alive connections, a few at a time: the statuses are the point, not the connections.
  for (let start = 0; start < STATUSES.length; start += 8) {
    const batch = STATUSES.slice(start, start + 8);
    assert.deepEqual(await Promise.all(batch.map(statusFromBackend)), batch);
  }
  const samples = httpSeries(await scrape(gw));
  const labels = new Set(
    samples
      .filter((sample) => sample.labels.operation === "listPets")
      .map((sample) => sample.labels.http_response_status_code as string),
  );
  const byNumber = new Set([...LIST_PETS_DECLARES, ...GATEWAY_ANSWERS].map(String));
  for (const label of labels) {
    assert.ok(byNumber.has(label) || CLASSES.includes(label), `a series labelled ${label}`);
  }
  assert.ok(labels.has("200") && labels.has("401"), "the statuses listPets declares, by number");
  assert.ok(labels.has("503") && labels.has("410"), "the statuses the gateway itself answers, by number");
  assert.ok(!labels.has("418") && !labels.has("599"), "any other status by class");
  for (const label of CLASSES) assert.ok(labels.has(label), `the class ${label}`);
  // Each label of listPets at most once per histogram: a series per bucket, the sum and the count.
  const perLabel = 2 * (13 + 1 + 2);
  const added = samples.length - seriesBefore;
  assert.ok(added <= labels.size * perLabel, `${added} series added`);
  assert.ok(labels.size <= byNumber.size + CLASSES.length, `${labels.size} status labels`);
  console.log(`${added} series added by ${STATUSES.length} statuses, under ${labels.size} status labels`);
});

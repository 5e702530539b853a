// The document reloads while the gateway serves: a changed document is judged, built and swapped
// in between two requests; a broken, breaking or security-weakening one is refused and the
// running version keeps serving; a request in flight during the swap finishes under the version
// it arrived under.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { readFileSync, writeFileSync } from "node:fs";
import http, { type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { readDocumentSource } from "../src/openapi/document-source.ts";
import { DEFAULT_OPENAPI_FILE } from "../src/project-files.ts";
import {
  jsonAnswer,
  type ProgrammableBackend,
  startProgrammableBackend,
} from "./fixtures/programmable-backend.ts";
import { eventually } from "./support/eventually.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { type Sample, sampleValue, scrape } from "./support/metrics.ts";
import { writeDocumentFiles } from "./support/openapi-documents.ts";

// biome-ignore lint/suspicious/noExplicitAny: a parsed document, edited in place by each test
type Document = Record<string, any>;
const PET_STORE: Document = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));
const PETS = JSON.stringify([{ id: 1, name: "Rex", categoryId: 2 }]);

/** The Pet Store document, edited. */
function edited(change: (document: Document) => void): Document {
  const document = structuredClone(PET_STORE);
  change(document);
  return document;
}

const infoSeries = (samples: readonly Sample[]) => samples.filter((s) => s.name === "gateway_document_info");

interface Setup {
  readonly gw: TestGateway;
  readonly backend: ProgrammableBackend;
  readonly file: string;
  readonly key: string;
  write(document: unknown): void;
  close(): Promise<void>;
}

async function setUp(config: Record<string, unknown> = {}, upstreamUrl?: string): Promise<Setup> {
  const keys = writeKeysFile(["acme"]);
  const { key } = keys;
  const folder = writeDocumentFiles({ "openapi.json": PET_STORE });
  const file = join(folder, "openapi.json");
  const backend = await startProgrammableBackend();
  backend.behave(() => jsonAnswer(200, PETS));
  const gw = await startGateway({
    upstreamUrl: upstreamUrl ?? backend.url,
    keys,
    config: {
      openapi: file,
      ...config,
      policies: { responseContract: { mode: "enforce" } },
    },
  });
  return {
    gw,
    backend,
    file,
    key: key as string,
    write: (document) =>
      writeFileSync(file, typeof document === "string" ? document : JSON.stringify(document)),
    async close() {
      await gw.close();
      await backend.close();
    },
  };
}

describe("a document changed compatibly", () => {
  let s: Setup;
  before(async () => {
    s = await setUp();
  });
  after(() => s.close());

  test("is served after the reload, with the metrics naming the new version and keeping their series", async () => {
    const first = infoSeries(await scrape(s.gw));
    assert.equal(first.length, 1);
    // A document in one file: its sha256sum, the first 16 digits.
    const sum = createHash("sha256").update(readFileSync(s.file)).digest("hex");
    assert.equal(first[0]?.labels.sha256, sum.slice(0, 16));
    // The limit is clamped to the document's maximum before the backend sees it.
    const sentLimit = async () => {
      assert.equal((await request(`${s.gw.url}/pets?limit=150`, { key: s.key })).status, 200);
      return new URL(s.backend.requests.at(-1)?.url ?? "", "http://x").searchParams.get("limit");
    };
    assert.equal(await sentLimit(), "100");
    const before = sampleValue(await scrape(s.gw), "http_server_request_duration_seconds_count", {
      operation: "listPets",
    });

    s.write(
      edited((d) => {
        d.info.version = "1.1.0";
        d.paths["/pets"].get.parameters[0].schema.maximum = 200;
      }),
    );
    const outcome = await s.gw.gateway.document.reload("test");
    assert.equal(outcome.result, "ok", outcome.reason);
    assert.deepEqual(
      outcome.differences.map((d) => [d.kind, d.breaking]),
      [["bound-widened", false]],
    );

    assert.equal(await sentLimit(), "150");
    const samples = await scrape(s.gw);
    const info = infoSeries(samples);
    assert.equal(info.length, 1, "one version serving");
    assert.equal(info[0]?.labels.version, "1.1.0");
    assert.notEqual(info[0]?.labels.sha256, first[0]?.labels.sha256);
    assert.equal(sampleValue(samples, "gateway_document_reloads_total", { result: "ok" }), 1);
    // The series counts on from where it was: the two requests above, one per version.
    assert.equal(
      sampleValue(samples, "http_server_request_duration_seconds_count", { operation: "listPets" }),
      before + 1,
    );
    const line = s.gw.logs.messages("document reloaded")[0];
    assert.equal(line?.why, "test");
    assert.deepEqual(line?.differences, ["listPets: query parameter limit: maximum goes from 100 to 200"]);
  });

  test("the same files again change nothing", async () => {
    const outcome = await s.gw.gateway.document.reload("test");
    assert.equal(outcome.result, "unchanged");
    assert.equal(
      sampleValue(await scrape(s.gw), "gateway_document_reloads_total", { result: "unchanged" }),
      1,
    );
  });
});

describe("a candidate that cannot serve", () => {
  let s: Setup;
  before(async () => {
    s = await setUp();
  });
  after(() => s.close());

  test("a document that does not load is refused, said why, and the running one keeps serving", async () => {
    const running = infoSeries(await scrape(s.gw))[0]?.labels.sha256;
    s.write('{ "openapi": "3.1.0", ');
    const outcome = await s.gw.gateway.document.reload("test");
    assert.equal(outcome.result, "error");
    assert.match(outcome.reason ?? "", /cannot read the OpenAPI description .*JSON/);
    assert.equal((await request(`${s.gw.url}/pets`, { key: s.key })).status, 200);
    const line = s.gw.logs.messages("document reload refused; the running version keeps serving")[0];
    assert.equal(line?.result, "error");
    assert.equal(line?.level, "error");
    const samples = await scrape(s.gw);
    assert.equal(infoSeries(samples)[0]?.labels.sha256, running);
    assert.equal(sampleValue(samples, "gateway_document_reloads_total", { result: "error" }), 1);
  });

  test("a document a policy refuses (a plan that fails) is refused", async () => {
    s.write(
      edited((d) => {
        d.paths["/pets/{petId}"].get["x-gateway-deprecation"].since = "not a date";
      }),
    );
    const outcome = await s.gw.gateway.document.reload("test");
    assert.equal(outcome.result, "error");
    assert.match(outcome.reason ?? "", /since/);
    assert.equal((await request(`${s.gw.url}/pets/1`, { key: s.key })).status !== 500, true);
  });

  test("a breaking change is refused, naming it, and the operation it would remove keeps serving", async () => {
    s.write(edited((d) => delete d.paths["/pets/{petId}"]));
    const outcome = await s.gw.gateway.document.reload("test");
    assert.equal(outcome.result, "refused");
    assert.match(
      outcome.reason ?? "",
      /1 breaking change .*document\.allowBreaking.*getPet: removes GET \/pets\/\{petId\}/,
    );
    s.backend.behave(() => jsonAnswer(200, JSON.stringify({ id: 1, name: "Rex", categoryId: 2 })));
    assert.equal((await request(`${s.gw.url}/pets/1`, { key: s.key })).status, 200);
    s.backend.behave(() => jsonAnswer(200, PETS));
    assert.equal(sampleValue(await scrape(s.gw), "gateway_document_reloads_total", { result: "refused" }), 1);
  });

  test("an operation made public is refused", async () => {
    s.write(
      edited((d) => {
        d.paths["/pets"].get.security = [];
      }),
    );
    const outcome = await s.gw.gateway.document.reload("test");
    assert.equal(outcome.result, "refused");
    assert.match(outcome.reason ?? "", /weakens the security .*listPets/);
    assert.equal((await request(`${s.gw.url}/pets`)).status, 401);
  });
});

describe("document.allowBreaking", () => {
  let s: Setup;
  before(async () => {
    s = await setUp({ document: { allowBreaking: true } });
  });
  after(() => s.close());

  test("a breaking change is served, and the operation removed answers 404", async () => {
    s.write(edited((d) => delete d.paths["/pets/{petId}"]));
    const outcome = await s.gw.gateway.document.reload("test");
    assert.equal(outcome.result, "ok", outcome.reason);
    assert.equal((await request(`${s.gw.url}/pets/1`, { key: s.key })).status, 404);
  });

  test("security weakened is still refused", async () => {
    s.write(
      edited((d) => {
        delete d.paths["/pets/{petId}"];
        d.paths["/pets"].get.security = [];
      }),
    );
    const outcome = await s.gw.gateway.document.reload("test");
    assert.equal(outcome.result, "refused");
    assert.equal((await request(`${s.gw.url}/pets`)).status, 401);
  });
});

describe("a request in flight during a swap", () => {
  let s: Setup;
  // A backend that holds each answer until the test lets it go.
  const waiting: ServerResponse[] = [];
  const held = http.createServer((_req, res) => {
    waiting.push(res);
  });
  const answerAll = () => {
    for (const res of waiting.splice(0)) {
      res.writeHead(200, { "content-type": "application/json" }).end(PETS);
    }
  };
  before(async () => {
    held.listen(0, "127.0.0.1");
    await once(held, "listening");
    s = await setUp({}, `http://127.0.0.1:${(held.address() as AddressInfo).port}/v1`);
  });
  after(async () => {
    answerAll();
    held.closeAllConnections();
    held.close();
    await s.close();
  });

  test("finishes under the version it arrived under; the next one is judged by the new version", async () => {
    const inFlight = request(`${s.gw.url}/pets`, { key: s.key });
    await eventually("the backend holds the first request", () => waiting.length === 1);

    // The new version's Pet must carry a status, which the backend's answers lack.
    s.write(
      edited((d) => {
        d.components.schemas.Pet.required.push("status");
      }),
    );
    const outcome = await s.gw.gateway.document.reload("test");
    assert.equal(outcome.result, "ok", outcome.reason);
    assert.equal(s.gw.gateway.versions.finishing(), 1, "the old version still has a request");

    const next = request(`${s.gw.url}/pets`, { key: s.key });
    await eventually("the backend holds the second request", () => waiting.length === 2);
    answerAll();
    assert.equal((await inFlight).status, 200, "judged by the version it arrived under");
    assert.equal((await next).status, 502, "judged by the new version");
    await eventually(
      "the old version is closed once its request ended",
      () => s.gw.gateway.versions.finishing() === 0,
    );
  });
});

describe("decision mode", () => {
  let s: Setup;
  before(async () => {
    s = await setUp({ mode: "decision" }, "");
  });
  after(() => s.close());

  test("an operation a reload adds is allowed at the door after the swap, and the replaced version is let go", async () => {
    const decide = () =>
      request(`${s.gw.origin}/decide/envoy/v1/toys?limit=150`, {
        key: s.key,
        headers: { "x-forwarded-for": "203.0.113.9" },
      });
    assert.equal((await decide()).status, 404, "no such operation before the reload");

    s.write(
      edited((d) => {
        d.paths["/toys"] = structuredClone(d.paths["/pets"]);
        delete d.paths["/toys"].post;
        d.paths["/toys"].get.operationId = "listToys";
      }),
    );
    const outcome = await s.gw.gateway.document.reload("test");
    assert.equal(outcome.result, "ok", outcome.reason);

    const allowed = await decide();
    assert.equal(allowed.status, 200, allowed.body);
    // Judged by the new version's operation: its limit clamped to the document's maximum.
    assert.equal(allowed.headers["x-gateway-upstream-uri"], "/toys?limit=100");
    const line = s.gw.logs.lines.find(
      (l) => l.msg === "request" && l.reqId === allowed.headers["x-request-id"],
    );
    assert.equal(line?.operation, "listToys");
    assert.equal(line?.decision, "allow");
    await eventually(
      "the first version is closed once its decisions ended",
      () => s.gw.gateway.versions.finishing() === 0,
    );
  });
});

describe("a cluster worker's two steps, prepare then commit or abort", () => {
  let s: Setup;
  before(async () => {
    s = await setUp();
  });
  after(() => s.close());
  const sentLimit = async () => {
    assert.equal((await request(`${s.gw.url}/pets?limit=150`, { key: s.key })).status, 200);
    return new URL(s.backend.requests.at(-1)?.url ?? "", "http://x").searchParams.get("limit");
  };
  const widened = (maximum: number) =>
    edited((d) => {
      d.paths["/pets"].get.parameters[0].schema.maximum = maximum;
    });

  test("a prepared candidate serves only once committed, and an aborted one never", async () => {
    const { document } = s.gw.gateway;
    s.write(widened(120));
    const first = (await readDocumentSource(s.file)).source;
    const prepared = document.prepare(first, "test");
    assert.equal(prepared.result, "ok", prepared.reason);
    assert.equal(prepared.sha256, first.sha256);
    assert.equal(await sentLimit(), "100", "prepared, not serving yet");
    document.abort(first.sha256);
    assert.equal(document.commit(first.sha256, "test"), false, "nothing left to commit once aborted");
    assert.equal(await sentLimit(), "100");

    s.write(widened(150));
    const second = (await readDocumentSource(s.file)).source;
    assert.equal(document.prepare(second, "test").result, "ok");
    assert.equal(document.commit(first.sha256, "test"), false, "only the candidate prepared commits");
    assert.equal(document.commit(second.sha256, "test"), true);
    assert.equal(await sentLimit(), "150");
    assert.equal(document.prepare(second, "test").result, "unchanged");
  });

  test("a candidate that does not compile or breaks a client is not prepared", async () => {
    const { document } = s.gw.gateway;
    // JSON the primary reads, but no OpenAPI description.
    s.write({ openapi: "3.1.0" });
    const broken = document.prepare((await readDocumentSource(s.file)).source, "test");
    assert.equal(broken.result, "error");
    assert.match(broken.reason ?? "", /OpenAPI description/);
    s.write(edited((d) => delete d.paths["/pets/{petId}"]));
    const breaking = (await readDocumentSource(s.file)).source;
    assert.equal(document.prepare(breaking, "test").result, "refused");
    assert.equal(document.commit(breaking.sha256, "test"), false);
  });

  test("reloads asked for while one runs make one more, not one each", async () => {
    s.write(widened(180));
    const outcomes = await Promise.all([1, 2, 3].map(() => s.gw.gateway.document.reload("test")));
    assert.deepEqual(
      outcomes.map((outcome) => outcome.result),
      ["ok", "unchanged", "unchanged"],
    );
    assert.equal(await sentLimit(), "150");
  });
});

// Documents the way other teams write them hold the same end-to-end behaviour as the bundled one,
// in front of the demo backend: a 3.0 YAML document split over two files, with one Pet schema
// whose id is readOnly, and a 3.1 document with /v1 in its paths rather than in its server URL.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { PROJECT_ROOT } from "../src/project-files.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { OWN_DOCUMENT, writeDocumentFiles } from "./support/openapi-documents.ts";
import { type BackendProcess, startDemoBackendProcess } from "./support/processes.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;

interface Pet {
  id: number;
  name: string;
  categoryId: number;
  status?: string;
}

/** What a client relies on with the bundled document: list, create, get back, and the refusals. */
async function holdsThePetStore(gw: TestGateway): Promise<void> {
  const list = await request(`${gw.origin}/v1/pets?limit=500`, { key });
  assert.equal(list.status, 200, list.body);
  assert.equal(list.headers["x-limit-applied"], "100");
  assert.ok(list.json<Pet[]>().length > 0);
  const created = await request(`${gw.origin}/v1/pets`, {
    key,
    method: "POST",
    body: JSON.stringify({ name: "Biscuit", categoryId: 7, status: "pending" }),
  });
  assert.equal(created.status, 201, created.body);
  const pet = created.json<Pet>();
  const fetched = await request(`${gw.origin}/v1/pets/${pet.id}`, { key });
  assert.equal(fetched.status, 200);
  assert.deepEqual(fetched.json(), pet);
  assert.match(String(fetched.headers.deprecation), /^@\d+$/);
  assert.equal((await request(`${gw.origin}/v1/pets/9223372036854775808`, { key })).status, 400);
  assert.equal((await request(`${gw.origin}/v1/pets`)).status, 401);
  assert.equal((await request(`${gw.origin}/pets`, { key })).status, 404);
  assert.deepEqual(gw.logs.messages("contract violation"), [], "the backend's answers match the document");
}

describe("the gateway with other teams' documents, in front of the demo backend", () => {
  let backend: BackendProcess;
  /** The gateway with the 3.0 YAML document. */
  let yaml30: TestGateway;
  const gateways: TestGateway[] = [];
  const start = async (openapi: string, upstreamUrl: string, policies: Record<string, unknown> = {}) => {
    const gw = await startGateway({
      keys,
      upstreamUrl,
      config: { openapi: join(PROJECT_ROOT, openapi), policies },
    });
    gateways.push(gw);
    return gw;
  };
  before(async () => {
    backend = await startDemoBackendProcess();
    // The document only says getPet is deprecated; the gateway config dates it.
    yaml30 = await start("test/fixtures/openapi-3.0/openapi.yaml", backend.url, {
      lifecycle: {
        operations: { getPet: { since: "2026-01-01T00:00:00Z", sunset: "2030-12-05T00:00:00Z" } },
      },
    });
  });
  after(async () => {
    await Promise.all(gateways.map((gw) => gw.close()));
    await backend.close();
  });

  test("a 3.0 YAML document split over two files serves the Pet Store as the bundled one does", async () => {
    assert.equal(yaml30.gateway.api.basePath, "/v1");
    await holdsThePetStore(yaml30);
  });

  test("with one Pet schema whose id is readOnly, a request that sends an id is refused by name", async () => {
    const gw = yaml30;
    const answer = await request(`${gw.origin}/v1/pets`, {
      key,
      method: "POST",
      body: JSON.stringify({ id: 5, name: "Biscuit", categoryId: 7 }),
    });
    assert.equal(answer.status, 400);
    assert.deepEqual(answer.json(), {
      code: "INVALID_BODY",
      message: "/id is read-only: the service sets it, a request must not send it",
      status: 400,
    });
    assert.ok(gw.gateway.api.validateError(answer.json()));
  });

  test("a document with /v1 in its paths and a server URL without a path serves the same URLs", async () => {
    // The upstream is then the backend's origin: the gateway forwards the path as the document writes it.
    const gw = await start("test/fixtures/openapi-paths-with-v1.json", new URL(backend.url).origin);
    assert.equal(gw.gateway.api.basePath, "");
    await holdsThePetStore(gw);
  });
});

// The page size is the document's: nothing in the default config names an operation, so a
// document whose list is not called listPets starts as it is, its page size defaulted and clamped.
describe("a team's document without a listPets operation, with the default config", () => {
  let backend: BackendProcess;
  const gateways: TestGateway[] = [];
  before(async () => {
    backend = await startDemoBackendProcess();
  });
  after(async () => {
    await Promise.all(gateways.map((gw) => gw.close()));
    await backend.close();
  });

  const renamed = {
    "test/fixtures/openapi-own.json": () => {
      const document = JSON.parse(readFileSync(OWN_DOCUMENT, "utf8"));
      document.paths["/pets"].get.operationId = "findAnimals";
      return join(writeDocumentFiles({ "openapi.json": document }), "openapi.json");
    },
    "test/fixtures/openapi-3.0/": () => {
      const folder = join(PROJECT_ROOT, "test/fixtures/openapi-3.0");
      const yaml = readFileSync(join(folder, "openapi.yaml"), "utf8");
      assert.match(yaml, /operationId: listPets\n/);
      return join(
        writeDocumentFiles({
          "openapi.yaml": yaml.replace("operationId: listPets\n", "operationId: findAnimals\n"),
          "schemas.yaml": readFileSync(join(folder, "schemas.yaml"), "utf8"),
        }),
        "openapi.yaml",
      );
    },
  };
  for (const [fixture, write] of Object.entries(renamed)) {
    test(`${fixture} with its list renamed starts, and its limit is defaulted and clamped`, async () => {
      const gw = await startGateway({
        upstreamUrl: backend.url,
        keys,
        config: { openapi: write() },
      });
      gateways.push(gw);
      assert.equal(gw.gateway.api.operation("listPets"), undefined);
      assert.deepEqual(gw.gateway.api.operation("findAnimals")?.pageSize, {
        parameter: "limit",
        source: "named",
      });
      const clamped = await request(`${gw.url}/pets?limit=500`, { key });
      assert.equal(clamped.status, 200, clamped.body);
      assert.equal(clamped.headers["x-limit-applied"], "100");
      const defaulted = await request(`${gw.url}/pets`, { key });
      assert.equal(defaulted.headers["x-limit-applied"], "20");
      assert.ok(defaulted.json<Pet[]>().length <= 20);
    });
  }
});

// The first mistake people make with UPSTREAM_URL: a base path the backend does not serve. The
// gateway cannot know it at start-up without calling the backend, so it tells from the answers.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { eventually } from "./support/eventually.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { type BackendProcess, startDemoBackendProcess } from "./support/processes.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;
const WARNING = "upstream-base-path";

describe("a backend behind a wrong base path", () => {
  let backend: BackendProcess;
  let gw: TestGateway;
  before(async () => {
    backend = await startDemoBackendProcess();
    // The demo backend serves /v1/pets; this gateway asks it for /v1/v1/pets.
    gw = await startGateway({
      upstreamUrl: `${backend.url}/v1`,
      keys,
    });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("is named once in a warning with the UPSTREAM_URL that would work", async () => {
    for (let i = 0; i < 3; i++) assert.equal((await request(`${gw.url}/pets`, { key })).status, 404);
    const warnings = await eventually("one upstream-base-path warning", () => {
      const lines = gw.logs.lines.filter((line) => line.warning === WARNING);
      assert.equal(lines.length, 1);
      return lines;
    });
    const [line] = warnings as [Record<string, unknown>];
    assert.equal(line.level, "warn");
    assert.equal(line.operation, "listPets");
    assert.equal(line.upstream, `${backend.url}/v1`);
    assert.equal(line.forwardedTo, `${backend.url}/v1/pets`);
    assert.equal(line.fix, `UPSTREAM_URL=${backend.url} if the backend serves its paths without /v1`);
    assert.match(String(line.msg), /UPSTREAM_URL/);
  });
});

describe("a backend behind the right base path", () => {
  let backend: BackendProcess;
  let gw: TestGateway;
  before(async () => {
    backend = await startDemoBackendProcess();
    gw = await startGateway({ upstreamUrl: backend.url, keys });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("answering getPet's own 404 (an Error object) raises no warning", async () => {
    const missing = await request(`${gw.url}/pets/987654321`, { key });
    assert.equal(missing.status, 404);
    assert.equal((await request(`${gw.url}/pets`, { key })).status, 200);
    assert.deepEqual(
      gw.logs.lines.filter((line) => line.warning === WARNING),
      [],
    );
  });
});

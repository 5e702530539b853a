// Two paths that both match one request (test/fixtures/openapi-overlapping-paths.json: the red
// team's public /users/{id}/profile written before a private /users/me/{section}). Whether
// GET /v1/users/me/profile needs a key must not depend on which of them a backend's router runs:
// with different security the document is refused; with the same, the literal segment wins.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import policies from "../policies/index.ts";
import { planForCommand } from "../src/plan.ts";
import { PROJECT_ROOT } from "../src/project-files.ts";
import { ApiDescriptionError } from "../src/startup-errors.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { boundedConfigFile } from "./support/config-file.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { writeDocumentFiles } from "./support/openapi-documents.ts";

const DOCUMENT = join(PROJECT_ROOT, "test/fixtures/openapi-overlapping-paths.json");
const keys = writeKeysFile(["acme"]);
const { key } = keys;
// The fixture names no listPets: the limit policy is given nothing to clamp.
const policyOptions = { auth: { keysFile: keys.file }, limit: { parameters: [] } };
const REFUSAL =
  /paths\.\/users\/\{id\}\/profile and paths\.\/users\/me\/\{section\} both match GET \/users\/me\/profile, and their security differs \(getProfile: security: \[\]; getMySection: bearer\)/;

describe("a public template written before a private one that overlaps it", () => {
  let backend: ProgrammableBackend;
  before(async () => {
    backend = await startProgrammableBackend();
  });
  after(() => backend.close());

  test("stops start-up, naming both paths, and no request reaches the backend", async () => {
    // A gateway that did start is closed again: the assertion below is what fails then.
    const started = startGateway({
      upstreamUrl: backend.url,
      config: { openapi: DOCUMENT, policies: policyOptions },
    }).then(async (gw) => {
      await gw.close();
      return gw;
    });
    await assert.rejects(
      started,
      (error: unknown) => error instanceof ApiDescriptionError && REFUSAL.test(error.message),
    );
    assert.equal(backend.requests.length, 0);
  });

  test("npm run plan refuses it with the same message", () => {
    const file = boundedConfigFile({
      openapi: DOCUMENT,
      upstream: { url: backend.url },
      policies: policyOptions,
    });
    assert.throws(
      () => planForCommand(policies, { file }, Date.now),
      (error: unknown) => error instanceof ApiDescriptionError && REFUSAL.test(error.message),
    );
  });
});

describe("the same two paths with the same security, over HTTP", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  before(async () => {
    const document = JSON.parse(readFileSync(DOCUMENT, "utf8"));
    // getProfile takes the document's bearer requirement, as getMySection does.
    delete document.paths["/users/{id}/profile"].get.security;
    const openapi = join(writeDocumentFiles({ "openapi.json": document }), "openapi.json");
    backend = await startProgrammableBackend();
    gw = await startGateway({ upstreamUrl: backend.url, config: { openapi, policies: policyOptions } });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  const operationOf = (requestId: unknown) =>
    gw.logs.messages("request").find((line) => line.reqId === requestId)?.operation;

  test("GET /v1/users/me/profile is the literal segment's operation, whatever the document's order", async () => {
    const answer = await request(`${gw.url}/users/me/profile`, { key });
    assert.equal(answer.status, 200, answer.body);
    assert.equal(backend.requests.at(-1)?.url, "/v1/users/me/profile");
    assert.equal(operationOf(answer.headers["x-request-id"]), "getMySection");
    const other = await request(`${gw.url}/users/42/profile`, { key });
    assert.equal(other.status, 200, other.body);
    assert.equal(operationOf(other.headers["x-request-id"]), "getProfile");
  });

  test("without a key it gets 401 and never reaches the backend", async () => {
    const before = backend.requests.length;
    const answer = await request(`${gw.url}/users/me/profile`);
    assert.equal(answer.status, 401);
    assert.equal(backend.requests.length, before);
  });

  test("start-up warns once, naming both paths and a request both match", () => {
    const lines = gw.logs.lines.filter((line) => line.level === "warn" && line.warning === "paths-overlap");
    assert.equal(lines.length, 1);
    assert.deepEqual(lines[0]?.operations, ["getProfile", "getMySection"]);
    assert.match(
      String(lines[0]?.msg),
      /\/users\/\{id\}\/profile and \/users\/me\/\{section\} \(\/users\/me\/profile\)/,
    );
  });
});

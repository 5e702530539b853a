import assert from "node:assert/strict";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import pino from "pino";
import { errorBody } from "../src/errors.ts";
import {
  catalogueError,
  createGateway,
  errorCatalogue,
  type Gateway,
  policies,
  validateConfig,
} from "../src/index.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { type BackendProcess, startDemoBackendProcess } from "./support/processes.ts";

const { file: keysFile, key } = writeKeysFile(["embedder"]);
let backend: BackendProcess;
let gateway: Gateway;
let server: http.Server;
let origin: string;

before(async () => {
  backend = await startDemoBackendProcess();
  const config = validateConfig({ policies: { auth: { keysFile } } }, policies);
  gateway = createGateway({
    config,
    policies,
    upstreamUrl: backend.url,
    environment: "production",
    logger: pino({ level: "silent" }),
  });
  // Someone else's server: the gateway handles /v1, the host application keeps the rest.
  server = http.createServer((req, res) => {
    if (req.url?.startsWith("/v1/")) return gateway.handle(req, res);
    res.writeHead(200, { "content-type": "text/plain" }).end("host application");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  server.close();
  await gateway.close();
  await backend.close();
});

test("the gateway mounts as a handler on another Node HTTP server", async () => {
  const pets = await request(`${origin}/v1/pets?limit=2`, { key });
  assert.equal(pets.status, 200);
  assert.equal(pets.json<unknown[]>().length, 2);
  assert.equal((await request(`${origin}/v1/pets`)).status, 401);
  const own = await request(`${origin}/elsewhere`);
  assert.equal(own.body, "host application");
});

test("every error body of the catalogue is the interface's Error object", () => {
  for (const code of Object.keys(errorCatalogue) as (keyof typeof errorCatalogue)[]) {
    const body: unknown = JSON.parse(errorBody(catalogueError(code)));
    assert.ok(
      gateway.api.validateError(body),
      `${code}: ${JSON.stringify(gateway.api.validateError.errors)}`,
    );
    assert.equal((body as { status: number }).status, errorCatalogue[code]?.status);
    assert.equal((body as { code: string }).code, code);
  }
});

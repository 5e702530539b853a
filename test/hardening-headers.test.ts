// What a client may say to the backend through headers, over real HTTP, read back from a backend
// that records every header it received: look-alikes of the gateway's own headers (x_consumer
// beside X-Consumer) and what only a proxy in front may say about the client (X-Real-IP & co.).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { DEFAULT_OPENAPI_FILE } from "../src/project-files.ts";
import { contractAnswer } from "./fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { answerOf } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { writeDocumentFiles } from "./support/openapi-documents.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;

// The project's document, with listPets declaring header parameters whose names hold '_': one of
// the backend's own, and two that fold onto headers the gateway owns.
function documentWithHeaderParameters(): string {
  const document = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));
  document.paths["/pets"].get.parameters.push(
    { name: "X_Tenant_Id", in: "header", schema: { type: "string" } },
    { name: "x_consumer", in: "header", schema: { type: "string" } },
    { name: "X_Real_IP", in: "header", schema: { type: "string" } },
  );
  return join(writeDocumentFiles({ "openapi.json": document }), "openapi.json");
}

// What load balancers, CDNs and frameworks read as the client's address or connection, stated
// here as the specification rather than read from the code.
const CLIENT_CLAIMS: Readonly<Record<string, string>> = {
  "x-real-ip": "6.6.6.1",
  "true-client-ip": "6.6.6.2",
  "cf-connecting-ip": "6.6.6.3",
  "x-client-ip": "6.6.6.4",
  "x-cluster-client-ip": "6.6.6.5",
  "fastly-client-ip": "6.6.6.6",
  "forwarded-for": "6.6.6.7",
  "x-original-forwarded-for": "6.6.6.8",
  "x-forwarded-port": "8443",
  "x-forwarded-prefix": "/evil",
};

/** One GET of listPets with exactly these header names (as written), on its own connection. */
function listPets(gw: TestGateway, headers: Readonly<Record<string, string>>): Promise<number> {
  return new Promise((resolve, reject) => {
    const sent = { authorization: `Bearer ${key}`, ...headers };
    http
      .get(`${gw.url}/pets`, { headers: sent, agent: false }, (res) =>
        answerOf(res).then((answer) => resolve(answer.status), reject),
      )
      .on("error", reject);
  });
}

describe("look-alike and client-address headers", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let trusting: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    const openapi = documentWithHeaderParameters();
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { openapi },
    });
    trusting = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { openapi, server: { trustedProxies: ["127.0.0.1"] } },
    });
  });
  after(async () => {
    await gw.close();
    await trusting.close();
    await backend.close();
  });

  /** The headers the backend received for the last request. */
  const received = () => backend.requests.at(-1)?.headers ?? {};

  test("x_consumer: admin never reaches the backend beside the gateway's X-Consumer, even declared", async () => {
    for (const target of [gw, trusting]) {
      const status = await listPets(target, {
        x_consumer: "admin",
        X_Consumer: "admin",
        "x.consumer": "admin",
        x_forwarded_for: "6.6.6.6",
        x_request_id: "forged",
        x_undeclared: "anything",
      });
      assert.equal(status, 200);
      const seen = received();
      assert.equal(seen["x-consumer"], "acme", "the consumer is the gateway's to say");
      for (const name of ["x_consumer", "x.consumer", "x_forwarded_for", "x_request_id", "x_undeclared"]) {
        assert.equal(seen[name], undefined, `${name} reached the backend`);
      }
    }
  });

  test("a header parameter the document declares with '_' in its name reaches the backend", async () => {
    const status = await listPets(gw, { X_Tenant_Id: "t-42", "X-Plain": "kept" });
    assert.equal(status, 200);
    const seen = received();
    assert.equal(seen.x_tenant_id, "t-42");
    assert.equal(seen["x-plain"], "kept");
  });

  test("X-Real-IP, True-Client-IP, CF-Connecting-IP and the like from an untrusted peer never reach the backend", async () => {
    const status = await listPets(gw, { ...CLIENT_CLAIMS, X_Real_IP: "6.6.6.9" });
    assert.equal(status, 200);
    const seen = received();
    for (const name of [...Object.keys(CLIENT_CLAIMS), "x_real_ip"]) {
      assert.equal(seen[name], undefined, `${name} reached the backend`);
    }
    assert.equal(seen["x-forwarded-for"], "127.0.0.1", "the peer the gateway saw");
  });

  test("a trusted proxy's X-Real-IP and the like reach the backend as the proxy sent them", async () => {
    const status = await listPets(trusting, CLIENT_CLAIMS);
    assert.equal(status, 200);
    const seen = received();
    for (const [name, value] of Object.entries(CLIENT_CLAIMS)) {
      assert.equal(seen[name], value, `${name} from the trusted proxy`);
    }
  });
});

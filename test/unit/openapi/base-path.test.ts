// The public base path: the path of the document's server URLs (never their hosts), or the gateway
// config's when the document has none or several that disagree.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import policies from "../../../policies/index.ts";
import { validateConfig } from "../../../src/config.ts";
import { loadApiDescription } from "../../../src/openapi.ts";
import { loadDocument, minimalDocument, writeDocumentFiles } from "../../support/openapi-documents.ts";

const basePathOf = (servers: unknown) => loadDocument(minimalDocument({ servers })).basePath;

test("the base path is the path the server URLs share, whatever their hosts", () => {
  assert.equal(
    basePathOf([{ url: "https://petstore.example.com/v1" }, { url: "http://localhost:3000/v1/" }]),
    "/v1",
  );
  assert.equal(basePathOf([{ url: "/api/v2" }]), "/api/v2");
  assert.equal(
    basePathOf([
      {
        url: "https://{region}.example.com/{version}",
        variables: { region: { default: "eu" }, version: { default: "v3", enum: ["v3"] } },
      },
    ]),
    "/v3",
  );
});

test("a document without servers, or whose server has no path, has no base path", () => {
  assert.equal(basePathOf([]), "");
  assert.equal(basePathOf([{ url: "https://petstore.example.com" }]), "");
  const { servers: _, ...withoutServers } = minimalDocument();
  assert.equal(loadDocument(withoutServers).basePath, "");
});

test("servers that disagree on the path stop start-up, naming them, unless the config says which", () => {
  const document = minimalDocument({
    servers: [{ url: "https://petstore.example.com/v1" }, { url: "http://localhost:3000" }],
  });
  assert.throws(
    () => loadDocument(document),
    /servers disagree on the base path \(\/v1 in https:\/\/petstore\.example\.com\/v1, \/ in http:\/\/localhost:3000\): set basePath in the gateway config/,
  );
  const folder = writeDocumentFiles({ "openapi.json": document });
  assert.equal(loadApiDescription(join(folder, "openapi.json"), { basePath: "/v1" }).basePath, "/v1");
  assert.equal(loadApiDescription(join(folder, "openapi.json"), { basePath: "" }).basePath, "");
  assert.equal(
    loadApiDescription(join(folder, "openapi.json"), { basePath: "/pets-api/" }).basePath,
    "/pets-api",
  );
});

test("a server URL whose variable has no default stops start-up", () => {
  assert.throws(
    () => basePathOf([{ url: "https://example.com/{version}" }]),
    /servers\[0\]: a variable of .* has no default/,
  );
});

test("basePath in the gateway config is a path or empty, checked at start-up", () => {
  assert.equal(validateConfig({ basePath: "/v1" }, policies).basePath, "/v1");
  assert.equal(validateConfig({ basePath: "" }, policies).basePath, "");
  assert.equal(validateConfig({}, policies).basePath, undefined);
  for (const bad of ["v1", "/v1//x", "/v1?x=1", "/%2e%2e"]) {
    assert.throws(() => validateConfig({ basePath: bad }, policies), /basePath/, bad);
  }
});

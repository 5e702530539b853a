import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { accessOf } from "../../../../policies/auth/access.ts";
import { loadApiDescription, type Operation } from "../../../../src/openapi.ts";
import { DEFAULT_OPENAPI_FILE } from "../../../../src/project-files.ts";
import {
  failClosedSecurityDocument,
  loadDocument,
  OWN_DOCUMENT,
} from "../../../support/openapi-documents.ts";

interface Document {
  security?: unknown;
  paths: Record<string, Record<string, { security?: unknown }>>;
  components: { securitySchemes: Record<string, unknown> };
}

/** The team's document with its security rewritten; `operation` finds one by path and method. */
function documentWith(
  edit: (doc: Document, operation: (path: string, method: string) => { security?: unknown }) => void,
) {
  const doc = JSON.parse(readFileSync(OWN_DOCUMENT, "utf8")) as Document;
  edit(doc, (path, method) => doc.paths[path]?.[method] as { security?: unknown });
  return loadDocument(doc);
}

test("the project's document: every operation needs a bearer key, and there is nothing to warn about", () => {
  const api = loadApiDescription(DEFAULT_OPENAPI_FILE);
  const access = accessOf(api);
  for (const operation of api.operations)
    assert.deepEqual(access.of(operation), { public: false, unlike: undefined });
  assert.deepEqual(access.warnings, []);
});

test("only an operation's own security: [] makes it public; no security or another scheme still needs a key", () => {
  const api = loadApiDescription(OWN_DOCUMENT);
  const access = accessOf(api);
  const of = (id: string) => access.of(api.operation(id) as Operation);
  assert.deepEqual(of("listPets"), { public: true, unlike: undefined });
  assert.deepEqual(of("createPet"), { public: false, unlike: "apiKeyHeader: apiKey" });
  assert.deepEqual(of("getPet"), { public: false, unlike: "no security" });
  assert.equal(access.warnings.length, 1, "one warning for all of them");
  assert.deepEqual(access.warnings[0]?.operations, ["createPet", "getPet"]);
});

test("security: [] at the document's level, an anonymous {} and an undeclared scheme fail closed", () => {
  const api = loadDocument(failClosedSecurityDocument());
  const access = accessOf(api);
  const of = (id: string) => access.of(api.operation(id) as Operation);
  assert.equal(of("listPets").public, false);
  assert.match(String(of("listPets").unlike), /document's level/);
  assert.deepEqual(of("createPet"), { public: false, unlike: "{} (anonymous)" });
  assert.match(String(of("getPet").unlike), /missing, which components\.securitySchemes does not declare/);
});

test("HTTP bearer alone, or as one of several bearer alternatives, is what the gateway enforces: no warning", () => {
  const api = documentWith((doc, operation) => {
    doc.components.securitySchemes.bearer = { type: "http", scheme: "bearer" };
    doc.components.securitySchemes.partnerBearer = { type: "http", scheme: "bearer" };
    doc.security = [{ bearer: [] }];
    operation("/pets", "post").security = [{ bearer: [] }, { partnerBearer: [] }];
  });
  const access = accessOf(api);
  assert.deepEqual(
    access.warnings.flatMap((w) => w.operations),
    [],
  );
  assert.equal(access.of(api.operation("listPets") as Operation).public, true);
});

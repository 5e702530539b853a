// A snapshot of the document's files: read once (the document and every file its $refs name),
// hashed, and compiled from the snapshot alone, so that every process of a cluster compiles the
// same bytes however the files change meanwhile.
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { pathsOf, readDocumentSource } from "../../../src/openapi/document-source.ts";
import { compileDocumentSource, loadApiDescription } from "../../../src/openapi.ts";
import { minimalDocument, writeDocumentFiles } from "../../support/openapi-documents.ts";

const STATUS = { type: "string", enum: ["available", "sold"] };

function splitDocument(status: unknown = STATUS): string {
  const document = minimalDocument({
    body: { type: "object", properties: { status: { $ref: "schemas/status.json" } } },
  });
  return writeDocumentFiles({ "openapi.json": document, "schemas/status.json": status });
}

test("a snapshot holds the document and every file it refers to, and compiles as the files do", async () => {
  const folder = splitDocument();
  const { source } = await readDocumentSource(join(folder, "openapi.json"));
  assert.equal(source.texts.length, 2);
  assert.match(source.sha256, /^[0-9a-f]{64}$/);
  const fromFiles = loadApiDescription(join(folder, "openapi.json"));
  const fromSource = compileDocumentSource(source);
  assert.deepEqual(
    fromSource.operations.map((operation) => operation.id),
    fromFiles.operations.map((operation) => operation.id),
  );
  const validate = fromSource.operation("createPet")?.requestBody?.validate;
  assert.equal(validate?.({ status: "sold" }), true);
  assert.equal(validate?.({ status: "lost" }), false);
  assert.ok(pathsOf(source).some((path) => path.endsWith(join("schemas", "status.json"))));
});

test("a snapshot compiles with its files gone: nothing is read again", async () => {
  const folder = splitDocument();
  const { source } = await readDocumentSource(join(folder, "openapi.json"));
  rmSync(folder, { recursive: true });
  assert.equal(compileDocumentSource(source).operations.length, 2);
});

test("the hash changes when a referenced file changes, and only then", async () => {
  const folder = splitDocument();
  const file = join(folder, "openapi.json");
  const { source: first } = await readDocumentSource(file);
  assert.equal((await readDocumentSource(file)).source.sha256, first.sha256);
  writeFileSync(join(folder, "schemas/status.json"), JSON.stringify({ ...STATUS, enum: ["available"] }));
  assert.notEqual((await readDocumentSource(file)).source.sha256, first.sha256);
});

test("a snapshot of a broken document fails as loading it does", async () => {
  const folder = writeDocumentFiles({
    "openapi.json": minimalDocument({ body: { $ref: "missing.json" } }),
  });
  await assert.rejects(readDocumentSource(join(folder, "openapi.json")), /missing\.json/);
  const bad = writeDocumentFiles({ "openapi.json": "{ not json" });
  await assert.rejects(readDocumentSource(join(bad, "openapi.json")), /not valid JSON|JSON/);
});

// What file the gateway takes as its OpenAPI document: JSON or YAML by what it holds, bounded in
// size, refused in one line that names the file and the place, and never a YAML bomb.
import assert from "node:assert/strict";
import { closeSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { stringify } from "yaml";
import { MAX_DOCUMENT_BYTES } from "../../../src/openapi/read-document.ts";
import { loadApiDescription } from "../../../src/openapi.ts";
import { ApiDescriptionError } from "../../../src/startup-errors.ts";
import { minimalDocument, writeDocumentFiles } from "../../support/openapi-documents.ts";

/** The one-line error loading `text` as the document gives. */
function refusal(text: string, name = "openapi.yaml"): ApiDescriptionError {
  const folder = writeDocumentFiles({ [name]: text });
  try {
    loadApiDescription(join(folder, name));
  } catch (error) {
    assert.ok(error instanceof ApiDescriptionError, String(error));
    assert.equal(error.code, "GATEWAY_API_DESCRIPTION_INVALID");
    assert.doesNotMatch(error.message, /\n/);
    assert.ok(error.message.includes(join(folder, name)), error.message);
    return error;
  }
  assert.fail("the document was accepted");
}

test("a YAML document is read as the same JSON document is, whatever the file's name", () => {
  const document = minimalDocument({ openapi: "3.0.3" });
  for (const [name, text] of [
    ["openapi.yaml", stringify(document)],
    ["openapi.json", stringify(document)],
    ["openapi.yaml", JSON.stringify(document)],
    ["openapi", `\ufeff${stringify(document)}`],
  ] as const) {
    const folder = writeDocumentFiles({ [name]: text });
    const api = loadApiDescription(join(folder, name));
    assert.deepEqual(
      api.operations.map((operation) => `${operation.method} ${api.basePath}${operation.path}`),
      ["POST /v1/pets", "GET /v1/pets/{petId}"],
      name,
    );
  }
});

test("a YAML syntax error names the file, the line and the column, and quotes nothing of the text", () => {
  const secret = "s3cr3t-never-printed";
  const error = refusal(`openapi: 3.0.3\ninfo:\n  title: "${secret}\n  version: [1\n`);
  assert.match(
    error.message,
    /^cannot read the OpenAPI description .*openapi\.yaml: the file is not valid YAML: .+ \(line \d+, column \d+\)$/,
  );
  assert.ok(!error.message.includes(secret), error.message);
});

test("a JSON syntax error keeps its own message, with the line and column", () => {
  const error = refusal('{\n  "openapi": "3.1.0",\n  "info": {,}\n}', "openapi.json");
  assert.match(error.message, /openapi\.json: \/info is not valid JSON \(line 3, column 12\)$/);
});

test("a name given twice in one object is refused, in YAML and in JSON alike", () => {
  assert.match(
    refusal("openapi: 3.0.3\nopenapi: 3.1.0\n").message,
    /Map keys must be unique \(line 2, column 1\)/,
  );
  assert.match(
    refusal('{"openapi": "3.1.0", "paths": {}, "paths": {"/x": {}}}', "openapi.json").message,
    /the file gives \/paths more than once/,
  );
});

test("a YAML bomb is refused at once, saying why", () => {
  const levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"];
  for (let level = 1; level < 9; level++) {
    const previous = String.fromCharCode(96 + level);
    const name = String.fromCharCode(97 + level);
    levels.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(", ")}]`);
  }
  const started = performance.now();
  const error = refusal(`${levels.join("\n")}\n`);
  const elapsed = performance.now() - started;
  assert.match(error.message, /its YAML aliases expand beyond 100 copies \(a "billion laughs" document\)/);
  // 9^9 strings had it been expanded: minutes and gigabytes. Refused, it is a parse (~16 ms);
  // bounded loosely, as npm test runs two files at a time on two cores.
  assert.ok(elapsed < 5000, `${elapsed} ms`);
});

test("a file larger than 5 MB is refused before it is parsed", () => {
  const folder = writeDocumentFiles({});
  const file = join(folder, "huge.yaml");
  const fd = openSync(file, "w");
  // Not a document at all: were it parsed, the error would be a syntax error.
  writeSync(fd, Buffer.alloc(MAX_DOCUMENT_BYTES + 1, "{"));
  closeSync(fd);
  assert.throws(
    () => loadApiDescription(file),
    (error: Error) =>
      error instanceof ApiDescriptionError &&
      /huge\.yaml: the file is larger than 5 MB \(5242881 bytes\): it is refused before it is parsed$/.test(
        error.message,
      ),
  );
});

test("a file that parses to something other than an object says what it holds", () => {
  assert.match(refusal("not json\n").message, /: the file holds a string, not an OpenAPI document/);
  assert.match(refusal("- openapi: 3.1.0\n").message, /: the file holds a list, not an OpenAPI document/);
  assert.match(refusal("").message, /: the file holds null, not an OpenAPI document/);
});

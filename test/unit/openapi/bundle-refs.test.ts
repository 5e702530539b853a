// A document split over files: its $refs to files in its own folder are read at start-up; a
// $ref out of the folder, or to a URL, stops start-up, and no URL is ever fetched.
import assert from "node:assert/strict";
import { once } from "node:events";
import { symlinkSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import { MAX_REFERENCED_FILES } from "../../../src/openapi/bundle-refs.ts";
import { loadApiDescription } from "../../../src/openapi.ts";
import { minimalDocument, writeDocumentFiles } from "../../support/openapi-documents.ts";

const PET = {
  type: "object",
  required: ["name"],
  properties: { name: { type: "string" }, status: { $ref: "#/Status" } },
};
const SCHEMAS = { Pet: PET, Status: { type: "string", enum: ["available", "sold"] } };

/** Loads a document whose createPet body is `body`, written beside `files`; returns the body validator. */
function bodyOf(body: unknown, files: Record<string, unknown>, document = minimalDocument({ body })) {
  const folder = writeDocumentFiles({ "api/openapi.json": document, ...files });
  const api = loadApiDescription(join(folder, "api/openapi.json"));
  const validate = api.operation("createPet")?.requestBody?.validate;
  assert.ok(validate);
  return validate;
}

function refusal(body: unknown, files: Record<string, unknown> = {}): string {
  try {
    bodyOf(body, files);
  } catch (error) {
    const message = (error as Error).message;
    assert.doesNotMatch(message, /\n/);
    return message;
  }
  assert.fail("the document was accepted");
}

test("a schema in another file, and the schemas it refers to in its own file, validate as if written in place", () => {
  for (const ref of ["./schemas.yaml#/Pet", "schemas.yaml#/Pet", "shared/../schemas.yaml#/Pet"]) {
    const validate = bodyOf({ $ref: ref }, { "api/schemas.yaml": SCHEMAS });
    assert.ok(validate({ name: "Rex", status: "sold" }), ref);
    assert.equal(validate({ name: "Rex", status: "lost" }), false, ref);
    assert.equal(validate({ status: "sold" }), false, ref);
  }
});

test("a full document's components and a whole file can be referred to", () => {
  const other = { openapi: "3.1.0", components: { schemas: SCHEMAS } };
  const inOther = bodyOf(
    { $ref: "other.json#/components/schemas/Pet" },
    {
      "api/other.json": {
        ...other,
        components: {
          schemas: {
            ...SCHEMAS,
            Pet: {
              ...PET,
              properties: { ...PET.properties, status: { $ref: "#/components/schemas/Status" } },
            },
          },
        },
      },
    },
  );
  assert.ok(inOther({ name: "Rex", status: "available" }));
  assert.equal(inOther({ name: "Rex", status: "lost" }), false);
  const whole = bodyOf({ $ref: "status.yaml" }, { "api/status.yaml": "type: string\nenum: [available]\n" });
  assert.ok(whole("available"));
  assert.equal(whole("sold"), false);
});

test("a recursive schema in another file stays recursive, and a components entry keeps its name", () => {
  const tree = {
    Node: {
      type: "object",
      required: ["name"],
      properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#/Node" } } },
    },
  };
  const document = minimalDocument({
    body: { $ref: "#/components/schemas/Node" },
    schemas: { Node: { $ref: "./tree.yaml#/Node" } },
  });
  const validate = bodyOf(undefined, { "api/tree.yaml": tree }, document);
  assert.ok(validate({ name: "a", children: [{ name: "b", children: [{ name: "c" }] }] }));
  assert.equal(validate({ name: "a", children: [{ name: "b", children: [{}] }] }), false);
});

test("a path item, a parameter or a response in another file is read in place", () => {
  const document = minimalDocument();
  (document.paths as Record<string, unknown>)["/pets/{petId}"] = { $ref: "./paths.yaml#/pet" };
  const folder = writeDocumentFiles({
    "openapi.json": document,
    "paths.yaml": [
      "pet:",
      "  get:",
      "    operationId: getPet",
      "    parameters: [{ $ref: '#/petId' }]",
      "    responses:",
      "      '200': { description: ok, content: { application/json: { schema: { $ref: './schemas.yaml#/Pet' } } } }",
      "petId: { name: petId, in: path, required: true, schema: { type: integer, format: int64 } }",
    ].join("\n"),
    "schemas.yaml": SCHEMAS,
  });
  const api = loadApiDescription(join(folder, "openapi.json"));
  const getPet = api.operation("getPet");
  assert.equal(getPet?.pathParameters[0]?.format, "int64");
  const answer = getPet?.responses.get("200")?.validate;
  assert.ok(answer?.({ name: "Rex" }));
  assert.equal(answer?.({ name: 1 }), false);
});

test("a cycle of objects that are not schemas is refused, naming the files", () => {
  const document = minimalDocument();
  (document.paths as Record<string, unknown>)["/pets/{petId}"] = { $ref: "./a.yaml#/item" };
  const folder = writeDocumentFiles({
    "openapi.json": document,
    "a.yaml": "item: { $ref: './b.yaml#/item' }\n",
    "b.yaml": "item: { $ref: './a.yaml#/item' }\n",
  });
  assert.throws(
    () => loadApiDescription(join(folder, "openapi.json")),
    /\$ref \.\/a\.yaml#\/item is part of a cycle \(a\.yaml#\/item -> b\.yaml#\/item -> a\.yaml#\/item\)/,
  );
});

test("a $ref out of the document's folder stops start-up, by ../, by an absolute path or by a link", () => {
  const outside = writeDocumentFiles({ "schemas.yaml": SCHEMAS });
  assert.match(
    refusal({ $ref: "../schemas.yaml#/Pet" }, { "schemas.yaml": SCHEMAS }),
    /\$ref \.\.\/schemas\.yaml#\/Pet in the document leaves the document's folder/,
  );
  assert.match(refusal({ $ref: `${outside}/schemas.yaml#/Pet` }), /leaves the document's folder/);
  assert.match(
    refusal({ $ref: "/etc/passwd" }),
    /\$ref \/etc\/passwd in the document leaves the document's folder/,
  );
  const folder = writeDocumentFiles({
    "api/openapi.json": minimalDocument({ body: { $ref: "./linked.yaml#/Pet" } }),
  });
  symlinkSync(join(outside, "schemas.yaml"), join(folder, "api/linked.yaml"));
  assert.throws(
    () => loadApiDescription(join(folder, "api/openapi.json")),
    /linked\.yaml#\/Pet in the document leaves the document's folder/,
  );
});

test("a $ref to a URL stops start-up, and the URL is never fetched", async (t) => {
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.end(JSON.stringify(SCHEMAS));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  for (const ref of [
    `${origin}/schemas.json#/Pet`,
    `//127.0.0.1:${(server.address() as AddressInfo).port}/schemas.json`,
  ]) {
    assert.match(refusal({ $ref: ref }), /is a URL, and the gateway never fetches one/);
  }
  assert.match(refusal({ $ref: "file:///etc/passwd" }), /is not a relative file path/);
  // The server is there and answers: a fetch would have counted.
  assert.equal((await fetch(`${origin}/schemas.json`)).status, 200);
  assert.equal(requests, 1);
});

test("a $ref to a missing file or to nothing in a file names what is missing", () => {
  assert.match(
    refusal({ $ref: "./nope.yaml#/Pet" }),
    /\$ref \.\/nope\.yaml#\/Pet in the document: no file nope\.yaml/,
  );
  assert.match(
    refusal({ $ref: "./schemas.yaml#/Cat" }, { "api/schemas.yaml": SCHEMAS }),
    /\$ref \.\/schemas\.yaml#\/Cat: schemas\.yaml has nothing at \/Cat/,
  );
  assert.match(
    refusal({ $ref: "./schemas.yaml#Pet" }, { "api/schemas.yaml": SCHEMAS }),
    /only JSON pointers/,
  );
});

test("a chain of more files than the bound stops start-up instead of reading on", () => {
  const files: Record<string, unknown> = {};
  for (let index = 0; index <= MAX_REFERENCED_FILES; index++) {
    files[`api/s${index}.json`] = { S: { type: "array", items: { $ref: `./s${index + 1}.json#/S` } } };
  }
  assert.match(
    refusal({ $ref: "./s0.json#/S" }, files),
    new RegExp(`refers to more than ${MAX_REFERENCED_FILES - 1} other files`),
  );
});

test("a syntax error in a referred file names that file, the line and the column", () => {
  assert.match(
    refusal({ $ref: "./schemas.yaml#/Pet" }, { "api/schemas.yaml": "Pet:\n  type: [object\n" }),
    /openapi\.json: schemas\.yaml is not valid YAML: .+ \(line \d+, column \d+\)$/,
  );
  assert.match(
    refusal({ $ref: "./schemas.json#/Pet" }, { "api/schemas.json": '{"Pet": {"type": obj}}' }),
    /openapi\.json: schemas\.json: \/Pet\/type is not valid JSON \(line 1, column 18\)$/,
  );
});

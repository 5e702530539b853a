import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import responseContract from "../../../../policies/response-contract/index.ts";
import { confirmingLine, inference, inferRules } from "../../../../policies/response-contract/inference.ts";
import { loadApiDescription, type Operation } from "../../../../src/openapi.ts";
import { DEFAULT_OPENAPI_FILE, PROJECT_ROOT } from "../../../../src/project-files.ts";
import { loadDocument, OWN_DOCUMENT } from "../../../support/openapi-documents.ts";

test("on the project's document the inference finds exactly the rules the document states", () => {
  const api = loadApiDescription(DEFAULT_OPENAPI_FILE);
  for (const operation of api.operations) {
    assert.deepEqual(
      inferRules(operation, api),
      operation.extensions["x-gateway-response-rules"],
      operation.id,
    );
  }
});

test("on a team's own document: page size from the document, filter, identity and echo", () => {
  const api = loadApiDescription(OWN_DOCUMENT);
  const rules = (id: string) => {
    const operation = api.operation(id);
    assert.ok(operation);
    return inferRules(operation, api);
  };
  assert.deepEqual(rules("listPets"), [
    { rule: "page-size", status: "200", parameter: "limit" },
    { rule: "filter", status: "200", parameter: "status", field: "status" },
  ]);
  assert.deepEqual(rules("getPet"), [{ rule: "identity", status: "200", parameter: "petId", field: "id" }]);
  assert.deepEqual(rules("createPet"), [
    { rule: "echo", status: "201", fields: ["name", "categoryId", "status"] },
  ]);
});

test("no page-size rule where the document gives no page size", () => {
  const document = JSON.parse(readFileSync(OWN_DOCUMENT, "utf8"));
  document.paths["/pets"].get.parameters[0]["x-gateway-page-size"] = false;
  const api = loadDocument(document);
  const listPets = api.operation("listPets");
  assert.ok(listPets);
  assert.deepEqual(inferRules(listPets, api), [
    { rule: "filter", status: "200", parameter: "status", field: "status" },
  ]);
});

test("with one Pet schema for both ways, the echo leaves out its readOnly id, which a request cannot send", () => {
  const api = loadApiDescription(join(PROJECT_ROOT, "test/fixtures/openapi-3.0/openapi.yaml"));
  const createPet = api.operation("createPet");
  assert.ok(createPet);
  assert.deepEqual(inferRules(createPet, api), [
    { rule: "echo", status: "201", fields: ["name", "categoryId", "status", "nickname"] },
  ]);
});

test("the confirming line is the config that states the rules, ready to paste", () => {
  const rules = [{ rule: "identity" as const, status: "200", parameter: "petId", field: "id" }];
  const line = confirmingLine("getPet", rules);
  assert.equal(
    line,
    '"policies": {"responseContract":{"rules":{"getPet":[{"rule":"identity","status":"200","parameter":"petId","field":"id"}]}}}',
  );
  assert.deepEqual(JSON.parse(`{${line}}`).policies.responseContract.rules.getPet, rules);
});

/** A 3.0 YAML Pet Store as many teams write it: Pet is allOf [NewPet, {id}]; getPet's answer as `answer`. */
function composedDocument(answer = '$ref: "#/components/schemas/Pet"') {
  return loadDocument(
    `openapi: 3.0.3
info: { title: composed, version: "1" }
paths:
  /pets:
    get:
      operationId: listPets
      parameters:
        - { name: limit, in: query, schema: { type: integer, minimum: 1, maximum: 100 } }
        - { name: status, in: query, schema: { $ref: "#/components/schemas/PetStatus" } }
      responses:
        "200":
          description: a page
          content:
            application/json:
              schema: { type: array, items: { $ref: "#/components/schemas/Pet" } }
    post:
      operationId: createPet
      requestBody:
        required: true
        content:
          application/json:
            schema: { $ref: "#/components/schemas/NewPet" }
      responses:
        "201":
          description: created
          content:
            application/json:
              schema: { $ref: "#/components/schemas/Pet" }
  /pets/{petId}:
    get:
      operationId: getPet
      parameters:
        - { name: petId, in: path, required: true, schema: { type: integer, format: int64 } }
      responses:
        "200":
          description: the animal
          content:
            application/json:
              schema: { ${answer} }
components:
  schemas:
    PetStatus: { type: string, enum: [available, pending, sold] }
    NewPet:
      type: object
      required: [name]
      properties:
        name: { type: string }
        status: { $ref: "#/components/schemas/PetStatus" }
    Pet:
      allOf:
        - $ref: "#/components/schemas/NewPet"
        - type: object
          required: [id]
          properties:
            id: { type: integer, format: int64, readOnly: true }
    Cat: { type: object, properties: { id: { type: integer }, purrs: { type: boolean } } }
    Dog: { type: object, properties: { id: { type: integer }, barks: { type: boolean } } }
    Error: { type: object }
`,
    "openapi.yaml",
  );
}

test("rules are inferred through allOf: filter, identity and echo on a Pet composed of NewPet and its id", () => {
  const api = composedDocument();
  const rules = (id: string) => inference(api.operation(id) as Operation, api);
  assert.deepEqual(rules("listPets"), {
    rules: [
      { rule: "page-size", status: "200", parameter: "limit" },
      { rule: "filter", status: "200", parameter: "status", field: "status" },
    ],
    unread: [],
  });
  assert.deepEqual(rules("getPet"), {
    rules: [{ rule: "identity", status: "200", parameter: "petId", field: "id" }],
    unread: [],
  });
  assert.deepEqual(rules("createPet"), {
    rules: [{ rule: "echo", status: "201", fields: ["name", "status"] }],
    unread: [],
  });
  const nullable = composedDocument('allOf: [{ $ref: "#/components/schemas/Pet" }], nullable: true');
  assert.deepEqual(
    inferRules(nullable.operation("getPet") as Operation, nullable),
    [{ rule: "identity", status: "200", parameter: "petId", field: "id" }],
    "3.0's nullable around an allOf is read through too",
  );
});

test("an answer whose properties are behind oneOf infers nothing from it, and says which schema was not read", () => {
  const api = composedDocument(
    'oneOf: [{ $ref: "#/components/schemas/Cat" }, { $ref: "#/components/schemas/Dog" }]',
  );
  assert.deepEqual(inference(api.operation("getPet") as Operation, api), {
    rules: [],
    unread: ["its 200 answer"],
  });
  const warnings = responseContract.plan?.(
    { mode: "report", operations: {}, sample: 1, samples: {}, recentPerOperation: 20, rules: {} },
    { api, environment: "production", now: Date.now },
  ).warnings;
  assert.deepEqual(
    warnings?.map((w) => [w.warning, w.operations]),
    [["response-rules-not-inferred", ["getPet"]]],
  );
  assert.match(warnings?.[0]?.message ?? "", /getPet \(its 200 answer\)/);
  const off = responseContract.plan?.(
    { mode: "report", operations: {}, sample: 1, samples: {}, recentPerOperation: 20, rules: { getPet: [] } },
    { api, environment: "production", now: Date.now },
  ).warnings;
  assert.deepEqual(off, [], "rules the config states, none included, are not inferred, so nothing is missed");
});

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { confirmingLine, inferRules } from "../../../../policies/response-contract/inference.ts";
import { loadApiDescription } from "../../../../src/openapi.ts";
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

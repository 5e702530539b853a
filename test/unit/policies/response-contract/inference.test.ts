import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { confirmingLine, inferRules } from "../../../../policies/response-contract/inference.ts";
import { loadApiDescription } from "../../../../src/openapi.ts";
import { DEFAULT_OPENAPI_FILE, PROJECT_ROOT } from "../../../../src/project-files.ts";
import { OWN_DOCUMENT } from "../../../support/openapi-documents.ts";

const PAGE_SIZE = ["listPets.limit"];

test("on the project's document the inference finds exactly the rules the document states", () => {
  const api = loadApiDescription(DEFAULT_OPENAPI_FILE);
  for (const operation of api.operations) {
    assert.deepEqual(
      inferRules(operation, api, PAGE_SIZE),
      operation.extensions["x-gateway-response-rules"],
      operation.id,
    );
  }
});

test("on a team's own document: page size from limit's setting, filter, identity and echo", () => {
  const api = loadApiDescription(OWN_DOCUMENT);
  const rules = (id: string, pageSize = PAGE_SIZE) => {
    const operation = api.operation(id);
    assert.ok(operation);
    return inferRules(operation, api, pageSize);
  };
  assert.deepEqual(rules("listPets"), [
    { rule: "page-size", status: "200", parameter: "limit" },
    { rule: "filter", status: "200", parameter: "status", field: "status" },
  ]);
  assert.deepEqual(
    rules("listPets", []),
    [{ rule: "filter", status: "200", parameter: "status", field: "status" }],
    "no page size unless limit clamps the parameter",
  );
  assert.deepEqual(rules("getPet"), [{ rule: "identity", status: "200", parameter: "petId", field: "id" }]);
  assert.deepEqual(rules("createPet"), [
    { rule: "echo", status: "201", fields: ["name", "categoryId", "status"] },
  ]);
});

test("with one Pet schema for both ways, the echo leaves out its readOnly id, which a request cannot send", () => {
  const api = loadApiDescription(join(PROJECT_ROOT, "test/fixtures/openapi-3.0/openapi.yaml"));
  const createPet = api.operation("createPet");
  assert.ok(createPet);
  assert.deepEqual(inferRules(createPet, api, PAGE_SIZE), [
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

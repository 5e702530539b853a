// The response contract's plan of an operation: what it knows of each status before any answer.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { planOperation } from "../../../../policies/response-contract/plan.ts";
import { loadApiDescription, type Operation } from "../../../../src/openapi.ts";
import { DEFAULT_OPENAPI_FILE } from "../../../../src/project-files.ts";
import { writeDocumentFiles } from "../../../support/openapi-documents.ts";

const NO_RULES = { source: "document", entries: [] } as const;

test("a status's plan names the JSON media type the document declares, a +json one included", () => {
  const document = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));
  const ok = document.paths["/pets/{petId}"].get.responses["200"];
  ok.content = { "application/hal+json": ok.content["application/json"] };
  const api = loadApiDescription(join(writeDocumentFiles({ "openapi.json": document }), "openapi.json"));
  const statusOf = (id: string, status: number) =>
    planOperation(api.operation(id) as Operation, "report", NO_RULES).statuses[status];
  assert.equal(statusOf("getPet", 200)?.mediaType, "application/hal+json");
  assert.equal(statusOf("listPets", 200)?.mediaType, "application/json");
});

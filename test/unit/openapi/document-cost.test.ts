// What a document may cost to compile: values with aliases expanded, operations, and values in
// schemas, each bounded and refused in one line naming the bound, before anything is compiled.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import {
  checkDocumentCost,
  checkExpandedSize,
  MAX_DOCUMENT_VALUES,
  MAX_OPERATIONS,
  MAX_SCHEMA_VALUES,
} from "../../../src/openapi/document-cost.ts";
import { loadApiDescription } from "../../../src/openapi.ts";
import { ApiDescriptionError } from "../../../src/startup-errors.ts";
import { manyOperationsDocument } from "../../support/costly-documents.ts";
import { minimalDocument, writeDocumentFiles } from "../../support/openapi-documents.ts";

test("a value used in many places counts once per place, as the compiler walks it", () => {
  const shared = Array.from({ length: 999 }, (_, index) => index);
  // 1,000 places of 1,000 values (the array and its items): the bound, not over it.
  const atBound = Array.from({ length: MAX_DOCUMENT_VALUES / 1000 - 1 }, () => shared);
  assert.doesNotThrow(() => checkExpandedSize(atBound, "the file"));
  assert.throws(() => checkExpandedSize([...atBound, shared], "the file"), {
    message: `the file holds more than ${MAX_DOCUMENT_VALUES} values with its YAML aliases and $refs expanded: each alias counts as a copy of what it names`,
  });
});

test("a YAML document whose few aliases each stand for a large schema is refused, saying why", () => {
  const big = Array.from({ length: 6000 }, (_, index) => `    p${index}: {type: string}`).join("\n");
  const uses = Array.from({ length: 99 }, (_, index) => `  U${index}: *big`).join("\n");
  const folder = writeDocumentFiles({
    "openapi.yaml": `openapi: 3.1.0\ninfo: {title: t, version: '1'}\nbig: &big\n  properties:\n${big}\nmore:\n${uses}\n`,
  });
  assert.throws(
    () => loadApiDescription(join(folder, "openapi.yaml")),
    (error) => {
      assert.ok(error instanceof ApiDescriptionError);
      assert.match(
        error.message,
        /openapi\.yaml: the file holds more than 1000000 values with its YAML aliases/,
      );
      return true;
    },
  );
});

test("a document with more operations than the bound is refused before one is compiled", () => {
  assert.doesNotThrow(() => checkDocumentCost(manyOperationsDocument(MAX_OPERATIONS)));
  const folder = writeDocumentFiles({ "openapi.json": manyOperationsDocument(MAX_OPERATIONS + 1) });
  const started = performance.now();
  assert.throws(() => loadApiDescription(join(folder, "openapi.json")), {
    message: `cannot read the OpenAPI description ${join(folder, "openapi.json")}: the document has ${MAX_OPERATIONS + 1} operations, more than the ${MAX_OPERATIONS} the gateway compiles at most`,
  });
  assert.ok(performance.now() - started < 2000);
});

test("schemas holding more values than the bound are refused, in components and in an operation alike", () => {
  const properties = (count: number) =>
    Object.fromEntries(Array.from({ length: count }, (_, index) => [`p${index}`, { type: "string" }]));
  // A schema of n properties is 2n + 3 values (itself, "type", "properties", each property and its
  // "type"); the document's other schemas hold fewer than 100.
  const fits = Math.floor((MAX_SCHEMA_VALUES - 100) / 2);
  const answer = { type: "object", properties: properties(fits) };
  assert.doesNotThrow(() => checkDocumentCost(minimalDocument({ answer })));
  const over = { type: "object", properties: properties(fits + 100) };
  const message = `the document's schemas hold more than ${MAX_SCHEMA_VALUES} values with their aliases and $refs expanded`;
  assert.throws(() => checkDocumentCost(minimalDocument({ answer: over })), { message });
  assert.throws(() => checkDocumentCost(minimalDocument({ schemas: { Big: over } })), { message });
});

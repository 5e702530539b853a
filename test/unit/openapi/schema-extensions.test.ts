// A team's schemas carry their tools' x-* extensions (x-go-type, x-faker, ...): OpenAPI allows
// them in any schema, so they compile and constrain nothing, while a misspelt keyword still
// stops start-up.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadDocument, minimalDocument } from "../../support/openapi-documents.ts";

test("x-* extensions in a schema compile and carry no validation; a misspelt keyword still stops start-up", () => {
  for (const openapi of ["3.0.3", "3.1.0"]) {
    const api = loadDocument(
      minimalDocument({
        openapi,
        body: {
          type: "object",
          "x-go-type": "Pet",
          properties: { name: { type: "string", "x-faker": "name.firstName", "x-order": 1 } },
        },
      }),
    );
    const validate = api.operation("createPet")?.requestBody?.validate;
    assert.ok(validate?.({ name: "Rex" }));
    assert.equal(validate?.({ name: 1 }), false);
    assert.throws(
      () => loadDocument(minimalDocument({ openapi, body: { type: "object", propertys: {} } })),
      /strict mode: unknown keyword: "propertys"/,
    );
  }
});

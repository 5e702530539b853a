// One schema for both ways: a readOnly property is neither required nor accepted in a request
// body, a writeOnly one neither in an answer; each stays required where it belongs. 3.0 and 3.1.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ValidateFunction } from "ajv";
import { describeSchemaError, untrustedValueWording } from "../../../src/schema-error.ts";
import { loadDocument, minimalDocument } from "../../support/openapi-documents.ts";

const PET = {
  type: "object",
  required: ["id", "name", "password"],
  properties: {
    id: { type: "integer", format: "int64", readOnly: true },
    name: { type: "string" },
    password: { type: "string", writeOnly: true },
  },
};

function views(
  openapi: string,
  schemas: Record<string, unknown>,
  body: unknown = { $ref: "#/components/schemas/Pet" },
) {
  const api = loadDocument(minimalDocument({ openapi, body, answer: body, schemas }));
  const operation = api.operation("createPet");
  const request = operation?.requestBody?.validate;
  const response = operation?.responses.get("201")?.validate;
  assert.ok(request && response);
  return { request, response };
}

function said(validate: ValidateFunction, value: unknown, subject: string): string {
  assert.equal(validate(value), false, `${JSON.stringify(value)} was accepted`);
  return describeSchemaError(validate.errors, untrustedValueWording(subject));
}

for (const openapi of ["3.0.3", "3.1.0"]) {
  test(`${openapi}: a required readOnly id is not required in a request and is refused there by name`, () => {
    const { request, response } = views(openapi, { Pet: PET });
    assert.ok(request({ name: "Rex", password: "p" }), JSON.stringify(request.errors));
    assert.equal(
      said(request, { id: 7, name: "Rex", password: "p" }, "body"),
      "/id is read-only: the service sets it, a request must not send it",
    );
    // In the answer it is still required.
    assert.ok(response({ id: 7, name: "Rex" }), JSON.stringify(response.errors));
    assert.equal(response({ name: "Rex" }), false);
  });

  test(`${openapi}: a required writeOnly password is not required in an answer and is refused there`, () => {
    const { request, response } = views(openapi, { Pet: PET });
    assert.equal(
      said(response, { id: 7, name: "Rex", password: "p" }, "the answer"),
      "/password is write-only: an answer must not carry it",
    );
    // The response contract counts a violation by its keyword: schema:writeOnlyProperty.
    assert.equal(response.errors?.[0]?.keyword, "writeOnlyProperty");
    assert.equal(request({ name: "Rex" }), false, "a request still needs the password");
  });

  test(`${openapi}: readOnly reached through a $ref, an allOf or a nested object is honoured`, () => {
    const schemas = {
      Id: { type: "integer", format: "int64", readOnly: true },
      Named: {
        type: "object",
        required: ["id", "name"],
        properties: { id: { $ref: "#/components/schemas/Id" }, name: { type: "string" } },
      },
      Pet: {
        type: "object",
        allOf: [
          { $ref: "#/components/schemas/Named" },
          {
            type: "object",
            required: ["owner"],
            properties: { owner: { $ref: "#/components/schemas/Named" } },
          },
        ],
      },
    };
    const { request, response } = views(openapi, schemas);
    assert.ok(request({ name: "Rex", owner: { name: "Ann" } }), JSON.stringify(request.errors));
    assert.match(
      said(request, { name: "Rex", owner: { id: 1, name: "Ann" } }, "body"),
      /^\/owner\/id is read-only/,
    );
    assert.match(said(request, { id: 1, name: "Rex", owner: { name: "Ann" } }, "body"), /^\/id is read-only/);
    assert.ok(
      response({ id: 1, name: "Rex", owner: { id: 2, name: "Ann" } }),
      JSON.stringify(response.errors),
    );
    assert.equal(response({ name: "Rex", owner: { id: 2, name: "Ann" } }), false);
  });
}

test("a document without readOnly or writeOnly validates requests and answers with one schema", () => {
  const { request, response } = views("3.1.0", {
    Pet: { type: "object", required: ["id"], properties: { id: { type: "integer" } } },
  });
  assert.equal(request({}), false);
  assert.equal(response({}), false);
  assert.ok(request({ id: 1 }) && response({ id: 1 }));
});

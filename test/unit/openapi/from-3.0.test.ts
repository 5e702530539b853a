// An OpenAPI 3.0 schema accepts and refuses what 3.0 says, once the gateway has compiled it as
// JSON Schema 2020-12: one test per construct where the two differ, each with a value it must
// accept and one it must refuse.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ValidateFunction } from "ajv";
import { checkParameter } from "../../../src/parameters.ts";
import { loadDocument, minimalDocument } from "../../support/openapi-documents.ts";

/** createPet's body validator for a 3.0 document whose body schema is `body`. */
function bodyValidator(body: unknown, schemas: Record<string, unknown> = {}): ValidateFunction {
  const api = loadDocument(minimalDocument({ openapi: "3.0.3", body, schemas }));
  const validate = api.operation("createPet")?.requestBody?.validate;
  assert.ok(validate);
  return validate;
}

function accepts(validate: ValidateFunction, ...values: unknown[]): void {
  for (const value of values)
    assert.ok(validate(value), `${JSON.stringify(value)}: ${JSON.stringify(validate.errors)}`);
}

function refuses(validate: ValidateFunction, ...values: unknown[]): void {
  for (const value of values) assert.equal(validate(value), false, `${JSON.stringify(value)} was accepted`);
}

test("3.0 nullable: true with a type accepts null as well as the type, and nothing else", () => {
  const validate = bodyValidator({
    type: "object",
    properties: { nickname: { type: "string", nullable: true } },
  });
  accepts(validate, { nickname: "Rex" }, { nickname: null }, {});
  refuses(validate, { nickname: 3 });
  // Without nullable, null is a wrong type in 3.0 too.
  refuses(bodyValidator({ type: "object", properties: { nickname: { type: "string" } } }), {
    nickname: null,
  });
});

test("3.0 nullable: true with an enum accepts null besides the listed values", () => {
  const validate = bodyValidator({
    type: "object",
    properties: { status: { type: "string", enum: ["available", "sold"], nullable: true } },
  });
  accepts(validate, { status: "available" }, { status: null });
  refuses(validate, { status: "lost" }, { status: 1 });
});

test("3.0 nullable: true beside a $ref accepts null or what the referred schema accepts", () => {
  const validate = bodyValidator(
    { type: "object", properties: { status: { $ref: "#/components/schemas/Status", nullable: true } } },
    { Status: { type: "string", enum: ["available", "sold"] } },
  );
  accepts(validate, { status: "sold" }, { status: null });
  refuses(validate, { status: "lost" });
});

test("3.0 nullable: true on an allOf of a $ref accepts null or an instance of that schema", () => {
  const validate = bodyValidator(
    {
      type: "object",
      properties: { owner: { allOf: [{ $ref: "#/components/schemas/Owner" }], nullable: true } },
    },
    { Owner: { type: "object", required: ["name"], properties: { name: { type: "string" } } } },
  );
  accepts(validate, { owner: null }, { owner: { name: "Ann" } });
  refuses(validate, { owner: {} }, { owner: "Ann" });
});

test("3.0 boolean exclusiveMinimum and exclusiveMaximum exclude their bound; false includes it", () => {
  const exclusive = bodyValidator({
    type: "number",
    minimum: 0,
    exclusiveMinimum: true,
    maximum: 10,
    exclusiveMaximum: true,
  });
  accepts(exclusive, 0.5, 9.5);
  refuses(exclusive, 0, 10, -1);
  const inclusive = bodyValidator({
    type: "number",
    minimum: 0,
    exclusiveMinimum: false,
    maximum: 10,
    exclusiveMaximum: false,
  });
  accepts(inclusive, 0, 10);
  refuses(inclusive, -0.5, 10.5);
});

test("3.0 example is an annotation: the schema checks its type, not the example's value", () => {
  const validate = bodyValidator({ type: "integer", example: 5 });
  accepts(validate, 7, 5);
  refuses(validate, "5", 1.5);
});

test("3.0 ignores the members beside a $ref, so the gateway does too", () => {
  const validate = bodyValidator(
    { type: "object", properties: { name: { $ref: "#/components/schemas/Name", maxLength: 2 } } },
    { Name: { type: "string" } },
  );
  accepts(validate, { name: "a long name" });
  refuses(validate, { name: 3 });
});

test("a 3.0 int64 parameter stays an exact integer check, nullable or not", () => {
  for (const petIdSchema of [
    { type: "integer", format: "int64" },
    { type: "integer", format: "int64", nullable: true },
  ]) {
    const api = loadDocument(minimalDocument({ openapi: "3.0.3", petIdSchema }));
    const spec = api.operation("getPet")?.pathParameters[0];
    assert.ok(spec);
    assert.equal(spec.type, "integer");
    assert.equal(spec.format, "int64");
    assert.equal(checkParameter(spec, "9223372036854775807").ok, true);
    assert.deepEqual(checkParameter(spec, "9223372036854775808"), {
      ok: false,
      message: "petId must be within the int64 range",
    });
    assert.equal(checkParameter(spec, "null").ok, false);
  }
});

test("only OpenAPI 3.0.x and 3.1.x documents are read", () => {
  for (const openapi of ["2.0", "3.2.0", "3.1", "4.0.0"]) {
    assert.throws(
      () => loadDocument({ ...minimalDocument(), openapi }),
      /"openapi" must be a 3\.0\.x or 3\.1\.x version/,
      openapi,
    );
  }
  assert.ok(loadDocument(minimalDocument({ openapi: "3.0.0" })).operation("createPet"));
});

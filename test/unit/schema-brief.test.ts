import assert from "node:assert/strict";
import { test } from "node:test";
import { loadApiDescription } from "../../src/openapi.ts";
import { DEFAULT_OPENAPI_FILE } from "../../src/project-files.ts";
import { describeSchema, isMarked, propertiesOf } from "../../src/schema-brief.ts";

const { schemas } = loadApiDescription(DEFAULT_OPENAPI_FILE);

test("a schema in brief: its name, then its shape one level deep, required fields starred", () => {
  assert.equal(
    describeSchema({ $ref: "#/components/schemas/NewPet" }, schemas),
    "NewPet: object {name*: string, categoryId*: integer (int64), status: PetStatus}, nothing else",
  );
  assert.equal(describeSchema({ $ref: "#/components/schemas/Pets" }, schemas), "Pets: array of Pet");
  assert.equal(
    describeSchema({ $ref: "#/components/schemas/PetStatus" }, schemas),
    'PetStatus: one of "available", "pending", "sold"',
  );
  assert.equal(describeSchema({ type: "string", format: "uuid" }, schemas), "string (uuid)");
  assert.equal(describeSchema({ $ref: "#/components/schemas/Nope" }, schemas), "Nope");
});

test("properties are read through a $ref chain, and a cycle ends", () => {
  assert.deepEqual(Object.keys(propertiesOf({ $ref: "#/components/schemas/Pet" }, schemas) ?? {}), [
    "id",
    "name",
    "categoryId",
    "status",
  ]);
  const loop = { A: { $ref: "#/components/schemas/B" }, B: { $ref: "#/components/schemas/A" } };
  assert.equal(propertiesOf({ $ref: "#/components/schemas/A" }, loop), undefined);
});

test("as a request body, a readOnly property is shown refused and not required, on itself or through its $ref", () => {
  const own = {
    Pet: {
      type: "object",
      required: ["id", "name", "owner"],
      properties: {
        id: { type: "integer", readOnly: true },
        name: { type: "string" },
        owner: { $ref: "#/components/schemas/Owner" },
      },
    },
    Owner: { type: "string", readOnly: true },
  };
  const pet = { $ref: "#/components/schemas/Pet" };
  assert.equal(
    describeSchema(pet, own, true),
    "Pet: object {id (read-only, refused), name*: string, owner (read-only, refused)}",
  );
  assert.equal(describeSchema(pet, own), "Pet: object {id*: integer, name*: string, owner*: Owner}");
});

test("properties are read through allOf members as well, and a cycle of allOf ends", () => {
  const composed = {
    NewPet: { type: "object", properties: { name: { type: "string" } } },
    Pet: {
      allOf: [
        { $ref: "#/components/schemas/NewPet" },
        { properties: { id: { type: "integer", readOnly: true } } },
      ],
    },
    A: { allOf: [{ $ref: "#/components/schemas/B" }], properties: { a: {} } },
    B: { allOf: [{ $ref: "#/components/schemas/A" }], properties: { b: {} } },
  };
  const pet = propertiesOf({ $ref: "#/components/schemas/Pet" }, composed) ?? {};
  assert.deepEqual(Object.keys(pet), ["name", "id"]);
  assert.ok(isMarked(pet.id, "readOnly", composed));
  assert.deepEqual(Object.keys(propertiesOf({ $ref: "#/components/schemas/A" }, composed) ?? {}), ["a", "b"]);
});

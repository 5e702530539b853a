// Parameters as text (src/parameters.ts): an integer is an integer literal within its format's
// range before its schema is asked; numbers and booleans are read strictly; every refusal names
// the parameter and says what it must be.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { loadApiDescription, type ParameterSpec } from "../../src/openapi.ts";
import { checkParameter, parseIntegerLiteral } from "../../src/parameters.ts";
import { writeDocumentFiles } from "../support/openapi-documents.ts";

const query = (name: string, schema: Record<string, unknown>) => ({ name, in: "query", schema });
const document = {
  openapi: "3.1.0",
  info: { title: "parameters", version: "1" },
  servers: [{ url: "https://example.com/v1" }],
  paths: {
    "/things": {
      get: {
        operationId: "listThings",
        parameters: [
          query("small", { type: "integer", format: "int32", minimum: 1, maximum: 100 }),
          query("big", { type: "integer", format: "int64" }),
          query("plain", { type: "integer" }),
          query("ratio", { type: "number", maximum: 1 }),
          query("flag", { type: "boolean" }),
          query("status", { type: "string", enum: ["available", "sold"] }),
          query("word", { type: "string", maxLength: 3 }),
        ],
        responses: { "200": { description: "things" } },
      },
    },
  },
  components: {
    schemas: {
      Error: {
        type: "object",
        required: ["code", "message", "status"],
        properties: { code: { type: "string" }, message: { type: "string" }, status: { type: "integer" } },
      },
    },
  },
};
const api = loadApiDescription(join(writeDocumentFiles({ "openapi.json": document }), "openapi.json"));
const spec = (name: string) => api.operation("listThings")?.queryParameters.get(name) as ParameterSpec;
const refusal = (name: string, text: string) => {
  const check = checkParameter(spec(name), text);
  assert.equal(check.ok, false, `${name}=${text} passed`);
  return check.ok ? undefined : check.message;
};

test("an integer parameter is a plain integer literal: no sign but minus, no leading zero, point or exponent", () => {
  assert.deepEqual(checkParameter(spec("plain"), "-12"), { ok: true, value: -12 });
  assert.deepEqual(checkParameter(spec("plain"), "0"), { ok: true, value: 0 });
  for (const text of ["", "+1", "01", "1.0", "1e3", " 1", "0x10", "one"]) {
    assert.equal(refusal("plain", text), "plain must be an integer", JSON.stringify(text));
  }
});

test("an integer is checked against its format's range exactly, beyond what a double holds", () => {
  assert.equal(refusal("small", "2147483648"), "small must be within the int32 range");
  assert.deepEqual(checkParameter(spec("big"), "9223372036854775807").ok, true);
  assert.equal(refusal("big", "9223372036854775808"), "big must be within the int64 range");
  assert.equal(refusal("big", "-9223372036854775809"), "big must be within the int64 range");
});

test("then the schema: its bounds and its values, said in the refusal", () => {
  assert.deepEqual(checkParameter(spec("small"), "100"), { ok: true, value: 100 });
  assert.equal(refusal("small", "101"), "small must be <= 100");
  assert.equal(refusal("small", "0"), "small must be >= 1");
  assert.equal(refusal("status", "lost"), "status must be one of available, sold");
  assert.equal(refusal("word", "long"), "word must NOT have more than 3 characters");
});

test("a number must be finite and written as one; a boolean is true or false", () => {
  assert.deepEqual(checkParameter(spec("ratio"), "0.5"), { ok: true, value: 0.5 });
  for (const text of ["", " ", "NaN", "Infinity", "half"]) {
    assert.equal(refusal("ratio", text), "ratio must be a number", JSON.stringify(text));
  }
  assert.equal(refusal("ratio", "2"), "ratio must be <= 1");
  assert.deepEqual(checkParameter(spec("flag"), "false"), { ok: true, value: false });
  for (const text of ["TRUE", "1", "yes", ""])
    assert.equal(refusal("flag", text), "flag must be true or false");
});

test("parseIntegerLiteral reads the same literals, leaving the range to the policy that clamps", () => {
  assert.equal(parseIntegerLiteral("5000"), 5000);
  assert.equal(parseIntegerLiteral("-3"), -3);
  for (const text of ["5e3", "05", "+5", "5.0", ""]) assert.equal(parseIntegerLiteral(text), undefined, text);
});

// The page size is a fact of the document: the query parameter marked x-gateway-page-size, or
// else the only integer query parameter with a maximum named like a page size on a GET that
// answers an array. offset and page have that shape too, and are never taken.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadApiDescription } from "../../../src/openapi.ts";
import { DEFAULT_OPENAPI_FILE } from "../../../src/project-files.ts";
import { loadDocument } from "../../support/openapi-documents.ts";

const integer = (maximum?: number) => ({
  type: "integer",
  minimum: 0,
  ...(maximum === undefined ? {} : { maximum }),
});
const query = (name: string, schema: unknown, more: Record<string, unknown> = {}) => ({
  name,
  in: "query",
  schema,
  ...more,
});
const ITEMS = { type: "array", items: { type: "object", properties: { id: { type: "integer" } } } };

/** The page size of listItems: `method /items` with these query parameters, answering `answer` in 200. */
function pageSizeOf(parameters: unknown[], options: { method?: string; answer?: unknown } = {}) {
  const api = loadDocument({
    openapi: "3.1.0",
    info: { title: "items", version: "1" },
    paths: {
      "/items": {
        [options.method ?? "get"]: {
          operationId: "listItems",
          parameters,
          responses: {
            "200": {
              description: "the page",
              content: {
                "application/json": { schema: options.answer ?? { $ref: "#/components/schemas/Items" } },
              },
            },
          },
        },
      },
    },
    components: { schemas: { Items: ITEMS, Error: { type: "object" } } },
  });
  return api.operation("listItems")?.pageSize;
}

test("a query parameter marked x-gateway-page-size is the page size, whatever its name", () => {
  assert.deepEqual(pageSizeOf([query("size", integer(50), { "x-gateway-page-size": true })]), {
    parameter: "size",
    source: "marked",
  });
  assert.deepEqual(
    pageSizeOf([query("limit", integer(100)), query("take", integer(), { "x-gateway-page-size": true })]),
    { parameter: "take", source: "marked" },
    "the mark wins over the name rule, and needs no maximum",
  );
  assert.deepEqual(
    pageSizeOf([query("take", integer(10), { "x-gateway-page-size": true })], { method: "post" }),
    { parameter: "take", source: "marked" },
    "what the document marks is taken on any operation",
  );
});

test("the name rule takes an integer query parameter with a maximum named limit, pageSize, page_size or per_page", () => {
  for (const name of ["limit", "pageSize", "page_size", "per_page"]) {
    assert.deepEqual(pageSizeOf([query(name, integer(100))]), { parameter: name, source: "named" }, name);
  }
  assert.deepEqual(pageSizeOf([query("limit", integer(100))], { answer: ITEMS }), {
    parameter: "limit",
    source: "named",
  });
});

test("offset and page are never taken for the page size, though they have its shape", () => {
  const alone = pageSizeOf([query("offset", integer(10000)), query("page", integer(500))]);
  assert.equal(alone?.parameter, undefined);
  assert.deepEqual(
    pageSizeOf([
      query("page", integer(500)),
      query("offset", integer(10000)),
      query("per_page", integer(100)),
    ]),
    { parameter: "per_page", source: "named" },
  );
});

test("two parameters that fit the name rule: not inferred, both named, and the mark settles it", () => {
  const two = pageSizeOf([query("limit", integer(100)), query("per_page", integer(50))]);
  assert.equal(two?.parameter, undefined);
  assert.match(
    two && "reason" in two ? two.reason : "",
    /limit and per_page each fit the name rule; mark the page size x-gateway-page-size: true/,
  );
  assert.deepEqual(two && "candidates" in two ? two.candidates : [], ["limit", "per_page"]);
  assert.deepEqual(
    pageSizeOf([
      query("limit", integer(100), { "x-gateway-page-size": false }),
      query("per_page", integer(50)),
    ]),
    { parameter: "per_page", source: "named" },
    "x-gateway-page-size: false takes a parameter out of the rule",
  );
});

test("a parameter named like a page size but not an integer with a maximum is not inferred, and said why", () => {
  for (const schema of [integer(), { type: "string", maxLength: 3 }]) {
    const missed = pageSizeOf([query("limit", schema)]);
    assert.equal(missed?.parameter, undefined);
    assert.match(missed && "reason" in missed ? missed.reason : "", /^limit: not an integer with a maximum$/);
  }
  const none = pageSizeOf([query("q", { type: "string" })]);
  assert.match(none && "reason" in none ? none.reason : "", /^no query parameter marked x-gateway-page-size/);
  assert.deepEqual(none && "candidates" in none ? none.candidates : undefined, []);
});

test("the name rule looks only at a GET that answers an array", () => {
  assert.equal(
    pageSizeOf([query("limit", integer(100))], { answer: { type: "object", properties: {} } }),
    undefined,
    "an answer that is no array has no page",
  );
  assert.equal(pageSizeOf([query("limit", integer(100))], { method: "post" }), undefined, "not a GET");
  assert.equal(pageSizeOf([query("limit", integer(100))], { method: "delete" }), undefined, "not a GET");
});

test("a mark that cannot be a page size stops start-up, naming the parameter", () => {
  assert.throws(
    () => pageSizeOf([query("limit", integer(100), { "x-gateway-page-size": "yes" })]),
    /paths\.\/items\.get\.parameters\.limit: x-gateway-page-size must be true or false/,
  );
  assert.throws(
    () => pageSizeOf([query("cursor", { type: "string" }, { "x-gateway-page-size": true })]),
    /parameters\.cursor: x-gateway-page-size: the page size must be an integer parameter/,
  );
  assert.throws(
    () =>
      pageSizeOf([
        query("limit", integer(100), { "x-gateway-page-size": true }),
        query("size", integer(100), { "x-gateway-page-size": true }),
      ]),
    /x-gateway-page-size marks limit and size; an operation has one page size/,
  );
});

test("the bundled document marks listPets' limit, and no other operation has a page size", () => {
  const api = loadApiDescription(DEFAULT_OPENAPI_FILE);
  assert.deepEqual(
    api.operations.map((operation) => [operation.id, operation.pageSize]),
    [
      ["listPets", { parameter: "limit", source: "marked" }],
      ["createPet", undefined],
      ["getPet", undefined],
    ],
  );
});

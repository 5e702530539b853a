// The usage memory: per consumer and operation, the calls, first and last seen, the query names
// and enum values sent and the statuses received, as bits over the document's own names.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { mergeRows, type OperationUsage, UsageMemory } from "../../../../policies/usage/usage-memory.ts";
import { loadApiDescription, type Operation } from "../../../../src/openapi.ts";
import { DEFAULT_OPENAPI_FILE } from "../../../../src/project-files.ts";
import { loadDocument } from "../../../support/openapi-documents.ts";

const api = loadApiDescription(DEFAULT_OPENAPI_FILE);
function operation(id: string): Operation {
  const found = api.operation(id);
  assert.ok(found, id);
  return found;
}
const listPets = operation("listPets");
const getPet = operation("getPet");
const createPet = operation("createPet");
const T0 = Date.parse("2026-11-24T10:00:00Z");

/** What calls of `operation` record in `memory`. */
function usageOf(memory: UsageMemory, operation: Operation): OperationUsage {
  const usage = memory.of(operation);
  assert.ok(usage, operation.id);
  return usage;
}

const query = (entries: Record<string, string>) => new Map(Object.entries(entries));

describe("usage memory", () => {
  test("remembers names and enum values sent and statuses received, never other values", () => {
    const memory = new UsageMemory(api, 10, T0);
    usageOf(memory, listPets).sent("acme", query({ status: "sold", limit: "80", unknown: "x" }));
    usageOf(memory, listPets).answered("acme", 200, T0);
    usageOf(memory, listPets).sent("acme", query({ status: "whatever" }));
    usageOf(memory, listPets).answered("acme", 400, T0 + 1000);
    usageOf(memory, getPet).answered("acme", 404, T0 + 2000);
    assert.deepEqual(
      [...memory.rows()],
      [
        {
          consumer: "acme",
          operation: "listPets",
          calls: 2,
          firstSeen: "2026-11-24T10:00:00.000Z",
          lastSeen: "2026-11-24T10:00:01.000Z",
          parameters: ["limit", "status"],
          values: { status: ["sold"] },
          // 400 is not declared by listPets: not a bit of its own.
          statuses: ["200"],
          members: [],
          memberValues: {},
          sampled: 0,
          answerMembers: {},
        },
        {
          consumer: "acme",
          operation: "getPet",
          calls: 1,
          firstSeen: "2026-11-24T10:00:02.000Z",
          lastSeen: "2026-11-24T10:00:02.000Z",
          parameters: [],
          values: {},
          statuses: ["404"],
          members: [],
          memberValues: {},
          sampled: 0,
          answerMembers: {},
        },
      ],
    );
    assert.doesNotMatch(JSON.stringify([...memory.rows()]), /whatever|80|unknown/);
  });

  test("keeps at most maxConsumers, the least recently seen dropped and counted", () => {
    const memory = new UsageMemory(api, 2, T0);
    for (const consumer of ["a", "b", "a", "c", "d"]) usageOf(memory, listPets).answered(consumer, 200, T0);
    assert.equal(memory.consumers, 2);
    assert.equal(memory.evicted, 2);
    assert.deepEqual(
      [...memory.rows()].map((row) => row.consumer),
      ["d", "c"],
    );
  });

  test("the rows for the logs count the calls since the last time, once", () => {
    const memory = new UsageMemory(api, 10, T0);
    usageOf(memory, listPets).answered("acme", 200, T0);
    usageOf(memory, listPets).answered("acme", 200, T0);
    assert.deepEqual(
      [...memory.rows(true)].map((row) => row.calls),
      [2],
    );
    assert.deepEqual([...memory.rows(true)], []);
    usageOf(memory, listPets).answered("acme", 200, T0);
    assert.deepEqual(
      [...memory.rows(true)].map((row) => row.calls),
      [1],
    );
    assert.deepEqual(
      [...memory.rows()].map((row) => row.calls),
      [3],
    );
  });

  test("rows of several processes merge: calls summed, names united, the widest span", () => {
    const a = new UsageMemory(api, 10, T0);
    const b = new UsageMemory(api, 10, T0);
    usageOf(a, listPets).sent("acme", query({ status: "sold" }));
    usageOf(a, listPets).answered("acme", 200, T0);
    usageOf(b, listPets).sent("acme", query({ status: "pending", limit: "5" }));
    usageOf(b, listPets).answered("acme", 401, T0 + 5000);
    const [merged, ...rest] = mergeRows([...a.rows(), ...b.rows()]);
    assert.deepEqual(rest, []);
    assert.deepEqual(merged, {
      consumer: "acme",
      operation: "listPets",
      calls: 2,
      firstSeen: "2026-11-24T10:00:00.000Z",
      lastSeen: "2026-11-24T10:00:05.000Z",
      parameters: ["status", "limit"],
      values: { status: ["sold", "pending"] },
      statuses: ["200", "401"],
      members: [],
      memberValues: {},
      sampled: 0,
      answerMembers: {},
    });
  });

  test("remembers the request-body members sent as pointers into the schema, and enum members' values", () => {
    const memory = new UsageMemory(api, 10, T0);
    const body = { name: "Rex", categoryId: 2, status: "sold", extra: { deep: "x" } };
    usageOf(memory, createPet).sentBody("acme", Buffer.from(JSON.stringify(body)));
    usageOf(memory, createPet).sentBody("acme", Buffer.from("not json"));
    usageOf(memory, createPet).answered("acme", 201, T0);
    const [row] = [...memory.rows()];
    assert.deepEqual(row?.members, ["/name", "/categoryId", "/status"]);
    assert.deepEqual(row?.memberValues, { "/status": ["sold"] });
    // NewPet takes nothing else: "extra" is no bit; names and numbers are not values kept.
    assert.doesNotMatch(JSON.stringify(row), /extra|deep|Rex/);
  });

  test("array items are `-` and members the schema does not name but takes are `*`", () => {
    const document = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));
    Object.assign(document.components.schemas.NewPet.properties, {
      tags: {
        type: "array",
        items: { type: "object", properties: { label: { type: "string", enum: ["a", "b"] } } },
      },
      attributes: { type: "object", additionalProperties: { type: "string" } },
    });
    const edited = loadDocument(document);
    const create = edited.operation("createPet");
    assert.ok(create);
    const memory = new UsageMemory(edited, 10, T0);
    const body = {
      name: "Rex",
      tags: [{ label: "a" }, { label: "zzz" }],
      attributes: { colour: "red", size: "s" },
    };
    usageOf(memory, create).sentBody("acme", Buffer.from(JSON.stringify(body)));
    usageOf(memory, create).answered("acme", 201, T0);
    const [row] = [...memory.rows()];
    assert.deepEqual(row?.members, ["/name", "/tags", "/tags/-/label", "/attributes", "/attributes/*"]);
    assert.deepEqual(row?.memberValues, { "/tags/-/label": ["a"] });
  });

  test("the members present on a sampled answer, as pointers into its schema, by the response as written", () => {
    const memory = new UsageMemory(api, 10, T0);
    const page = [{ id: 1, name: "Rex", categoryId: 2, unknown: "x" }];
    usageOf(memory, listPets).receivedBody("acme", 200, JSON.stringify(page));
    usageOf(memory, listPets).receivedBody("acme", 200, "not json");
    usageOf(memory, listPets).answered("acme", 200, T0);
    const [row] = [...memory.rows()];
    assert.equal(row?.sampled, 1);
    assert.deepEqual(row?.answerMembers, { "200": ["/-/id", "/-/name", "/-/categoryId"] });
    assert.doesNotMatch(JSON.stringify(row), /Rex|unknown/);
  });
});

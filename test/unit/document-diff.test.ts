// The differences between the running document and a candidate, one test per kind of change, on
// the Pet Store document: what a client of the running document would meet, and which side of
// the exchange (what it sends, what it receives) it concerns.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import { compareDocuments, type DocumentDifference } from "../../src/document-diff.ts";
import type { ApiDescription } from "../../src/openapi.ts";
import { DEFAULT_OPENAPI_FILE } from "../../src/project-files.ts";
import { loadDocument, withChoices } from "../support/openapi-documents.ts";

// biome-ignore lint/suspicious/noExplicitAny: a parsed document, edited in place by each test
type Document = Record<string, any>;
const PET_STORE: Document = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));
const running = loadDocument(PET_STORE);
/** The policies' options of the default config: what a reload compares with. */
const OPTIONS = validateConfig({}, policies).policies;
const compare = (from: ApiDescription, to: ApiDescription) =>
  compareDocuments(from, to, { policies, options: OPTIONS });

/** The differences a reload judges from the Pet Store document to a copy that `change` edited. */
function diffAfter(change: (document: Document) => void): DocumentDifference[] {
  const candidate = structuredClone(PET_STORE);
  change(candidate);
  return compare(running, loadDocument(candidate));
}

/** The one difference of `kind` (fails when there is none, or several). */
function only(found: readonly DocumentDifference[], kind: string): DocumentDifference {
  const matching = found.filter((difference) => difference.kind === kind);
  assert.equal(matching.length, 1, `one ${kind} in ${JSON.stringify(found, null, 1)}`);
  return matching[0] as DocumentDifference;
}

const schemas = (document: Document) => document.components.schemas;
const listPets = (document: Document) => document.paths["/pets"].get;

describe("the same document", () => {
  test("has no difference from itself", () => {
    assert.deepEqual(
      diffAfter(() => {}),
      [],
    );
  });
});

describe("breaking changes", () => {
  test("an operation removed breaks its callers", () => {
    const found = diffAfter((d) => delete d.paths["/pets/{petId}"]);
    const removed = only(found, "operation-removed");
    assert.equal(removed.breaking, true);
    assert.equal(removed.operation, "getPet");
    assert.equal(removed.method, "GET");
    assert.equal(removed.path, "/pets/{petId}");
  });

  test("a method removed from a path is its operation removed", () => {
    const found = diffAfter((d) => delete d.paths["/pets"].post);
    assert.equal(only(found, "operation-removed").operation, "createPet");
  });

  test("a query parameter removed breaks a client that sends it", () => {
    const found = diffAfter((d) => listPets(d).parameters.pop());
    const removed = only(found, "parameter-removed");
    assert.equal(removed.breaking, true);
    assert.equal(removed.direction, "request");
    assert.equal(removed.location, "query parameter status");
  });

  test("a query parameter made required breaks a client that leaves it out", () => {
    const found = diffAfter((d) => {
      listPets(d).parameters[0].required = true;
    });
    const required = only(found, "parameter-made-required");
    assert.equal(required.breaking, true);
    assert.equal(required.location, "query parameter limit");
  });

  test("a required parameter added breaks every client", () => {
    const found = diffAfter((d) => {
      listPets(d).parameters.push({ name: "shop", in: "query", required: true, schema: { type: "string" } });
    });
    assert.equal(only(found, "parameter-made-required").breaking, true);
  });

  test("an enum value removed breaks a client that sends it, and is no news to one that receives it", () => {
    const found = diffAfter((d) => {
      schemas(d).PetStatus.enum = ["available", "pending"];
    });
    const removed = found.filter((difference) => difference.kind === "enum-value-removed");
    // PetStatus is sent (the status filter, NewPet) and received (Pet).
    const sent = removed.filter((difference) => difference.direction === "request");
    const received = removed.filter((difference) => difference.direction === "response");
    assert.ok(sent.length >= 2);
    assert.ok(sent.every((difference) => difference.breaking));
    assert.ok(received.length >= 1);
    assert.ok(received.every((difference) => !difference.breaking));
    assert.ok(sent.some((d) => d.operation === "listPets" && d.location === "query parameter status"));
    assert.ok(sent.some((d) => d.operation === "createPet" && d.pointer === "/status"));
    assert.match(sent[0]?.message ?? "", /"sold"/);
  });

  test("an enum value added breaks a client that switches over the values it receives", () => {
    const found = diffAfter((d) => {
      schemas(d).PetStatus.enum.push("lost");
    });
    const added = found.filter((difference) => difference.kind === "enum-value-added");
    assert.ok(added.some((d) => d.direction === "response" && d.breaking && d.pointer === "/-/status"));
    assert.ok(added.filter((d) => d.direction === "request").every((d) => !d.breaking));
  });

  test("a bound tightened breaks a client that sends the values it no longer takes", () => {
    const found = diffAfter((d) => {
      listPets(d).parameters[0].schema.maximum = 50;
    });
    const tightened = only(found, "bound-tightened");
    assert.equal(tightened.breaking, true);
    assert.equal(tightened.location, "query parameter limit");
    assert.match(tightened.message, /maximum goes from 100 to 50/);
  });

  test("a member made required breaks a client that leaves it out", () => {
    const found = diffAfter((d) => {
      schemas(d).NewPet.required.push("status");
    });
    const required = only(found, "member-made-required");
    assert.equal(required.breaking, true);
    assert.equal(required.operation, "createPet");
    assert.equal(required.pointer, "/status");
    assert.equal(required.location, "request body application/json");
  });

  test("a member removed from what a client sends breaks it when unknown members are refused", () => {
    const found = diffAfter((d) => delete schemas(d).NewPet.properties.status);
    const removed = found.filter(
      (difference) => difference.kind === "member-removed" && difference.direction === "request",
    );
    assert.equal(removed.length, 1);
    assert.equal(removed[0]?.breaking, true);
  });

  test("a response member removed breaks a client that reads it", () => {
    const found = diffAfter((d) => {
      delete schemas(d).Pet.properties.status;
    });
    const removed = found.filter((difference) => difference.kind === "member-removed");
    assert.ok(removed.length >= 2);
    assert.ok(removed.every((difference) => difference.direction === "response" && difference.breaking));
    assert.ok(removed.some((d) => d.operation === "listPets" && d.pointer === "/-/status"));
    assert.ok(removed.some((d) => d.operation === "getPet" && d.pointer === "/status"));
  });

  test("a response member made optional breaks a client that counts on it", () => {
    const found = diffAfter((d) => {
      schemas(d).Pet.required = ["id", "name"];
    });
    const optional = found.filter((difference) => difference.kind === "member-made-optional");
    assert.ok(optional.length >= 1);
    assert.ok(
      optional.every((d) => d.breaking && d.direction === "response" && d.pointer?.endsWith("/categoryId")),
    );
  });

  test("a response status removed breaks a client that handles it", () => {
    const found = diffAfter((d) => delete d.paths["/pets/{petId}"].get.responses["404"]);
    const removed = only(found, "status-removed");
    assert.equal(removed.breaking, true);
    assert.equal(removed.direction, "response");
    assert.equal(removed.location, "response 404");
  });

  test("a response status added breaks a client that switches over the statuses it knows", () => {
    const found = diffAfter((d) => {
      listPets(d).responses["429"] = { description: "slow down" };
    });
    assert.equal(only(found, "status-added").breaking, true);
  });

  test("a sunset moved earlier breaks the callers who planned for the old date", () => {
    const found = diffAfter((d) => {
      d.paths["/pets/{petId}"].get["x-gateway-deprecation"].sunset = "2029-01-01T00:00:00Z";
    });
    const earlier = only(found, "sunset-earlier");
    assert.equal(earlier.breaking, true);
    assert.equal(earlier.operation, "getPet");
    assert.match(earlier.message, /2029-01-01/);
  });

  test("security changed breaks the callers who present what it asked before", () => {
    const found = diffAfter((d) => {
      d.components.securitySchemes.apiKey = { type: "apiKey", in: "header", name: "x-api-key" };
      listPets(d).security = [{ apiKey: [] }];
    });
    const changed = only(found, "security-strengthened");
    assert.equal(changed.breaking, true);
    // Another scheme instead of the bearer key lets in a caller who has only that: weaker too.
    assert.equal(only(found, "security-weakened").weakensSecurity, true);
  });

  test("a type changed breaks both sides", () => {
    const found = diffAfter((d) => {
      schemas(d).Pet.properties.categoryId = { type: "string" };
    });
    assert.ok(found.some((d) => d.kind === "type-changed" && d.breaking && d.direction === "response"));
  });

  test("a changed base path moves every URL", () => {
    const found = diffAfter((d) => {
      d.servers = [{ url: "https://petstore.example.com/v2" }];
    });
    assert.equal(only(found, "base-path-changed").breaking, true);
  });

  test("breaking differences come first", () => {
    const found = diffAfter((d) => {
      listPets(d).parameters.push({ name: "shop", in: "query", schema: { type: "string" } });
      delete d.paths["/pets/{petId}"];
    });
    assert.deepEqual(
      found.map((difference) => difference.kind),
      ["operation-removed", "parameter-added"],
    );
  });
});

describe("security weakened", () => {
  test("an operation made public weakens security", () => {
    const found = diffAfter((d) => {
      listPets(d).security = [];
    });
    const weakened = only(found, "security-weakened");
    assert.equal(weakened.weakensSecurity, true);
    assert.equal(weakened.operation, "listPets");
    assert.match(weakened.message, /anyone/);
  });

  test("an anonymous alternative beside the key weakens security", () => {
    const found = diffAfter((d) => {
      listPets(d).security = [{ bearerAuth: [] }, {}];
    });
    assert.equal(only(found, "security-weakened").weakensSecurity, true);
    assert.equal(
      found.some((d) => d.kind === "security-strengthened"),
      false,
    );
  });

  test("the document's requirement removed weakens every operation that inherited it", () => {
    const found = diffAfter((d) => delete d.security);
    assert.deepEqual(
      found.filter((d) => d.kind === "security-weakened").map((d) => d.operation),
      ["listPets", "createPet", "getPet"],
    );
  });
});

describe("changes that break no client", () => {
  test("an operation added", () => {
    const found = diffAfter((d) => {
      d.paths["/pets/{petId}"].delete = {
        operationId: "deletePet",
        parameters: d.paths["/pets/{petId}"].get.parameters,
        responses: { "204": { description: "gone" } },
      };
    });
    const added = only(found, "operation-added");
    assert.equal(added.breaking, false);
    assert.equal(added.operation, "deletePet");
  });

  test("an optional parameter added, a bound widened, a parameter made optional", () => {
    const found = diffAfter((d) => {
      listPets(d).parameters.push({ name: "shop", in: "query", schema: { type: "string" } });
      listPets(d).parameters[0].schema.maximum = 200;
      d.paths["/pets"].post.requestBody.required = false;
    });
    assert.deepEqual(found.map((d) => `${d.kind} ${d.breaking}`).sort(), [
      "bound-widened false",
      "parameter-added false",
      "request-body-made-optional false",
    ]);
  });

  test("an optional request member added, a response member added, a sunset moved later", () => {
    const found = diffAfter((d) => {
      schemas(d).NewPet.properties.tag = { type: "string" };
      schemas(d).Pet.properties.tag = { type: "string" };
      d.paths["/pets/{petId}"].get["x-gateway-deprecation"].sunset = "2031-01-01T00:00:00Z";
    });
    assert.ok(found.length >= 3);
    assert.ok(
      found.every((d) => !d.breaking && !d.weakensSecurity),
      JSON.stringify(found),
    );
    assert.ok(found.some((d) => d.kind === "sunset-later"));
    assert.ok(
      found.some((d) => d.kind === "member-added" && d.direction === "request" && d.pointer === "/tag"),
    );
  });

  test("an enum value added to what clients send", () => {
    const found = diffAfter((d) => {
      listPets(d).parameters[1].schema = { type: "string", enum: ["available", "pending", "sold", "lost"] };
    });
    assert.deepEqual(
      found.map((d) => [d.kind, d.breaking, d.direction]),
      [["enum-value-added", false, "request"]],
    );
  });

  test("security made stricter the other way round is not a weakening: a key now required where none was", () => {
    const open = structuredClone(PET_STORE);
    open.paths["/pets"].get.security = [];
    const found = compare(loadDocument(open), running);
    assert.equal(only(found, "security-strengthened").breaking, true);
    assert.equal(
      found.some((d) => d.weakensSecurity),
      false,
    );
  });

  test("a recursive schema compares in bounded work", () => {
    const found = diffAfter((d) => {
      schemas(d).Pet.properties.parent = { $ref: "#/components/schemas/Pet" };
      schemas(d).Pet.properties.children = { type: "array", items: { $ref: "#/components/schemas/Pet" } };
    });
    assert.ok(found.every((d) => !d.breaking));
  });
});

describe("oneOf and anyOf, alternative by alternative", () => {
  const CHOICES = structuredClone(PET_STORE);
  withChoices(CHOICES);
  const withChoicesRunning = loadDocument(CHOICES);
  const choicesAfter = (change: (document: Document) => void) => {
    const candidate = structuredClone(CHOICES);
    change(candidate);
    return compare(withChoicesRunning, loadDocument(candidate));
  };
  const createBody = (d: Document) => d.paths["/pets"].post.requestBody.content["application/json"].schema;
  const getPetAnswer = (d: Document) =>
    d.paths["/pets/{petId}"].get.responses["200"].content["application/json"].schema;

  test("an alternative removed from what clients send breaks those who send that shape", () => {
    const removed = only(
      choicesAfter((d) => createBody(d).oneOf.pop()),
      "alternative-removed",
    );
    assert.equal(removed.breaking, true);
    assert.equal(removed.direction, "request");
    assert.equal(removed.location, "request body application/json");
    assert.equal(removed.pointer, "");
    assert.match(removed.message, /removes the alternative ImportedPet of its oneOf/);
    // What tells an imported pet from a described one, as usage records a body.
    assert.deepEqual(removed.alternative, { members: ["/registry", "/registryId"], values: {} });
  });

  test("an alternative added to what clients send breaks nobody", () => {
    const found = choicesAfter((d) => createBody(d).oneOf.push({ type: "object", title: "AdoptedPet" }));
    assert.deepEqual(
      found.map((d) => [d.kind, d.breaking, d.direction]),
      [["alternative-added", false, "request"]],
    );
  });

  test("an alternative added to an answer breaks the clients that switch over its shapes", () => {
    const added = only(
      choicesAfter((d) =>
        getPetAnswer(d).oneOf.push({
          type: "object",
          required: ["id", "lostSince"],
          properties: { id: { type: "integer" }, lostSince: { type: "string" } },
        }),
      ),
      "alternative-added",
    );
    assert.equal(added.breaking, true);
    assert.equal(added.direction, "response");
    assert.equal(added.location, "response 200");
    assert.match(
      added.message,
      /may now be the alternative \(object \{id\*: integer, lostSince\*: string\}\)/,
    );
  });

  test("an alternative removed from an answer breaks nobody", () => {
    const found = choicesAfter((d) => getPetAnswer(d).oneOf.pop());
    assert.deepEqual(
      found.map((d) => [d.kind, d.breaking, d.direction]),
      [["alternative-removed", false, "response"]],
    );
  });

  test("members changed inside an alternative are classified like any member, at their own pointers", () => {
    const found = choicesAfter((d) => {
      schemas(d).ImportedPet.properties.registry.enum = ["akc"];
      schemas(d).ImportedPet.properties.microchip = { type: "string" };
      schemas(d).ImportedPet.required.push("microchip");
      delete schemas(d).ArchivedPet.properties.archivedAt;
      schemas(d).ArchivedPet.required = ["id"];
    });
    assert.deepEqual(
      found.map((d) => [d.kind, d.breaking, d.direction, d.pointer]),
      [
        ["enum-value-removed", true, "request", "/registry"],
        ["member-made-required", true, "request", "/microchip"],
        ["member-removed", true, "response", "/archivedAt"],
      ],
    );
  });

  test("renamed alternatives pair with the one they most resemble", () => {
    const found = choicesAfter((d) => {
      // The same imported pet, inline now, with one member more: changed, not removed and added.
      createBody(d).oneOf[1] = {
        type: "object",
        additionalProperties: false,
        required: ["registry", "registryId"],
        properties: {
          registry: { type: "string", enum: ["akc", "fci"] },
          registryId: { type: "string" },
          note: { type: "string" },
        },
      };
    });
    assert.deepEqual(
      found.map((d) => [d.kind, d.pointer]),
      [["member-added", "/note"]],
    );
  });

  test("anyOf made oneOf refuses a value two alternatives take: breaking for what clients send", () => {
    const found = choicesAfter((d) => {
      const body = createBody(d);
      body.anyOf = body.oneOf;
      delete body.oneOf;
    });
    assert.deepEqual(
      found.map((d) => [d.kind, d.breaking]),
      [["bound-widened", false]],
    );
    const back = compare(
      loadDocument(
        (() => {
          const d = structuredClone(CHOICES);
          const body = createBody(d);
          body.anyOf = body.oneOf;
          delete body.oneOf;
          return d;
        })(),
      ),
      withChoicesRunning,
    );
    assert.deepEqual(
      back.map((d) => [d.kind, d.breaking]),
      [["bound-tightened", true]],
    );
  });

  test("a member made nullable around its $ref: null is an alternative added, breaking only answers", () => {
    const found = diffAfter((d) => {
      const nullable = { anyOf: [{ $ref: "#/components/schemas/PetStatus" }, { type: "null" }] };
      schemas(d).Pet.properties.status = nullable;
      schemas(d).NewPet.properties.status = nullable;
    });
    assert.deepEqual(
      found.map((d) => [d.kind, d.breaking, d.direction, d.pointer, d.operation]),
      [
        ["alternative-added", true, "response", "/-/status", "listPets"],
        ["alternative-added", true, "response", "/status", "createPet"],
        ["alternative-added", true, "response", "/status", "getPet"],
        ["alternative-added", false, "request", "/status", "createPet"],
      ],
    );
  });

  test("a choice brought in where there was one shape is compared with that shape", () => {
    const found = diffAfter((d) => {
      d.paths["/pets/{petId}"].get.responses["200"].content["application/json"].schema = {
        oneOf: [{ $ref: "#/components/schemas/Pet" }, { type: "object", title: "Tombstone" }],
      };
    });
    assert.deepEqual(
      found.map((d) => [d.kind, d.breaking, d.message]),
      [
        [
          "alternative-added",
          true,
          'response 200: may now be the alternative "Tombstone", which a client switching over the alternatives it was told of does not know',
        ],
      ],
    );
  });
});

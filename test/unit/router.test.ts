// The router over documents loaded as start-up loads them: which operation a path reaches, with
// which parameters, and when a path is 404 or 405. Overlapping pairs and their security are
// test/unit/route-overlaps.test.ts.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Operation } from "../../src/openapi.ts";
import { createRouter, type RouteMatch } from "../../src/router.ts";
import { ApiDescriptionError } from "../../src/startup-errors.ts";
import { loadDocument, type PathOperation, pathsDocument } from "../support/openapi-documents.ts";

type Paths = Record<string, Record<string, PathOperation>>;

const operationsOf = (paths: Paths): readonly Operation[] => loadDocument(pathsDocument(paths)).operations;
const routerOf = (paths: Paths) => createRouter("/v1", operationsOf(paths));

/** The operationId and parameters a request reaches, or the status the router answers. */
function reached(match: RouteMatch): { id: string; params: Record<string, string> } | number {
  if (match.kind === "operation") return { id: match.operation.id, params: { ...match.pathParams } };
  return match.kind === "not-found" ? 404 : 405;
}

const op = (operationId: string): PathOperation => ({ operationId });

describe("which route a path reaches", () => {
  test("a static path is matched before a template that also matches it, wherever it is written", () => {
    const router = routerOf({
      "/pets/{petId}": { get: op("getPet") },
      "/pets/findByStatus": { get: op("findByStatus") },
    });
    assert.deepEqual(reached(router.match("GET", "/v1/pets/findByStatus")), {
      id: "findByStatus",
      params: {},
    });
    assert.deepEqual(reached(router.match("GET", "/v1/pets/7")), { id: "getPet", params: { petId: "7" } });
  });

  test("a literal segment is preferred to a parameter at the same place, whatever the document's order", () => {
    const router = routerOf({
      "/users/{id}/profile": { get: op("getProfile") },
      "/users/me/{section}": { get: op("getMine") },
    });
    assert.deepEqual(reached(router.match("GET", "/v1/users/me/profile")), {
      id: "getMine",
      params: { section: "profile" },
    });
    assert.deepEqual(reached(router.match("GET", "/v1/users/42/profile")), {
      id: "getProfile",
      params: { id: "42" },
    });
    assert.deepEqual(reached(router.match("GET", "/v1/users/me/settings")), {
      id: "getMine",
      params: { section: "settings" },
    });
  });

  test("the leftmost segment decides first, and a branch that ends nowhere gives way to the next", () => {
    const router = routerOf({
      "/{kind}/b/c": { get: op("anyKind") },
      "/a/{x}/c": { get: op("underA") },
      "/{kind}/b/d": { get: op("anyKindD") },
    });
    assert.deepEqual(reached(router.match("GET", "/v1/a/b/c")), { id: "underA", params: { x: "b" } });
    assert.deepEqual(reached(router.match("GET", "/v1/a/b/d")), { id: "anyKindD", params: { kind: "a" } });
    assert.deepEqual(reached(router.match("GET", "/v1/z/b/c")), { id: "anyKind", params: { kind: "z" } });
  });

  test("parameters at one place of two paths keep each path's own names", () => {
    const router = routerOf({
      "/users/{id}/profile": { get: op("getProfile") },
      "/users/{userId}/posts/{postId}": { get: op("getPost") },
    });
    assert.deepEqual(reached(router.match("GET", "/v1/users/3/posts/9")), {
      id: "getPost",
      params: { userId: "3", postId: "9" },
    });
    assert.deepEqual(reached(router.match("GET", "/v1/users/3/profile")), {
      id: "getProfile",
      params: { id: "3" },
    });
  });

  test("an empty segment, a longer or shorter path, or a path outside the base path reaches nothing", () => {
    const router = routerOf({ "/pets": { get: op("listPets") }, "/pets/{petId}": { get: op("getPet") } });
    for (const path of [
      "/v1/pets/",
      "/v1/pets/1/",
      "/v1/pets/1/2",
      "/v1",
      "/v1/",
      "/pets/1",
      "/v2/pets/1",
      "/v1pets/1",
    ]) {
      assert.equal(reached(router.match("GET", path)), 404, path);
    }
    const deep = `/v1/pets/${"a/".repeat(10_000)}`;
    assert.equal(reached(router.match("GET", deep)), 404);
  });
});

describe("the method decides among the routes a path matches", () => {
  const router = routerOf({
    "/users/me/{section}": { get: op("getMine") },
    "/users/{id}/profile": { get: op("getProfile"), delete: op("deleteProfile") },
    "/pets/findByStatus": { get: op("findByStatus") },
    "/pets/{petId}": { get: op("getPet"), delete: op("deletePet") },
  });

  test("a method the preferred route lacks reaches the next route that matches and has it", () => {
    assert.deepEqual(reached(router.match("DELETE", "/v1/users/me/profile")), {
      id: "deleteProfile",
      params: { id: "me" },
    });
    assert.deepEqual(reached(router.match("GET", "/v1/users/me/profile")), {
      id: "getMine",
      params: { section: "profile" },
    });
    assert.deepEqual(reached(router.match("DELETE", "/v1/pets/findByStatus")), {
      id: "deletePet",
      params: { petId: "findByStatus" },
    });
  });

  test("405 comes only when no route that matches has the method, and Allow lists all of theirs", () => {
    const answer = router.match("POST", "/v1/users/me/profile");
    assert.deepEqual(answer, { kind: "method-not-allowed", allow: "DELETE, GET, HEAD" });
    assert.deepEqual(router.match("PUT", "/v1/users/me/settings"), {
      kind: "method-not-allowed",
      allow: "GET, HEAD",
    });
    assert.deepEqual(router.match("POST", "/v1/pets/findByStatus"), {
      kind: "method-not-allowed",
      allow: "DELETE, GET, HEAD",
    });
  });

  test("HEAD follows each route's GET", () => {
    assert.deepEqual(reached(router.match("HEAD", "/v1/users/me/profile")), {
      id: "getMine",
      params: { section: "profile" },
    });
    assert.deepEqual(reached(router.match("HEAD", "/v1/pets/findByStatus")), {
      id: "findByStatus",
      params: {},
    });
  });
});

describe("a parameter inside a segment", () => {
  const router = routerOf({
    "/files/{name}": { get: op("getFile") },
    "/files/{name}.json": { get: op("getJson") },
    "/files/{name}.tar.json": { get: op("getTarJson") },
    "/jobs/{id}:cancel": { post: op("cancelJob") },
    "/v{version}/notes": { get: op("getNotes") },
  });

  test("is matched with its literal text around it, the longest literal text first", () => {
    assert.deepEqual(reached(router.match("GET", "/v1/files/report.json")), {
      id: "getJson",
      params: { name: "report" },
    });
    assert.deepEqual(reached(router.match("GET", "/v1/files/report.tar.json")), {
      id: "getTarJson",
      params: { name: "report" },
    });
    assert.deepEqual(reached(router.match("GET", "/v1/files/report.xml")), {
      id: "getFile",
      params: { name: "report.xml" },
    });
    assert.deepEqual(reached(router.match("POST", "/v1/jobs/42:cancel")), {
      id: "cancelJob",
      params: { id: "42" },
    });
    assert.deepEqual(reached(router.match("GET", "/v1/v2/notes")), {
      id: "getNotes",
      params: { version: "2" },
    });
  });

  test("is never empty and never matches its literal text alone", () => {
    assert.deepEqual(reached(router.match("GET", "/v1/files/.json")), {
      id: "getFile",
      params: { name: ".json" },
    });
    assert.equal(reached(router.match("POST", "/v1/jobs/:cancel")), 404);
    assert.equal(reached(router.match("POST", "/v1/jobs/cancel")), 404);
    assert.equal(reached(router.match("POST", "/v1/jobs/42:cancelled")), 404);
    assert.equal(reached(router.match("GET", "/v1/v/notes")), 404);
  });

  test("two parameters in one segment, or a brace out of place, stop start-up naming the segment", () => {
    for (const [path, message] of [
      [
        "/files/{name}.{ext}",
        /paths\.\/files\/\{name\}\.\{ext\}: the segment "\{name\}\.\{ext\}" holds more than one parameter/,
      ],
      ["/files/{a}{b}", /the segment "\{a\}\{b\}" holds more than one parameter/],
      ["/files/{name", /the segment "\{name" has a brace out of place/],
      ["/files/name}", /the segment "name\}" has a brace out of place/],
      ["/files/}name{", /the segment "\}name\{" has a brace out of place/],
    ] as const) {
      assert.throws(
        () => loadDocument(pathsDocument({ [path]: { get: op("getFile") } })),
        (error: unknown) => error instanceof ApiDescriptionError && message.test(error.message),
        path,
      );
    }
  });
});

describe("identical templates", () => {
  test("two paths that differ only in their parameters' names stop start-up, naming both", () => {
    const paths: Paths = { "/items/{a}": { get: op("getItem") }, "/items/{b}": { delete: op("deleteItem") } };
    assert.throws(
      () => operationsOf(paths),
      (error: unknown) =>
        error instanceof ApiDescriptionError &&
        /paths\.\/items\/\{a\} and paths\.\/items\/\{b\} are the same template/.test(error.message),
    );
    assert.throws(
      () => operationsOf({ "/f/{a}.json": { get: op("one") }, "/f/{b}.json": { get: op("two") } }),
      /paths\.\/f\/\{a\}\.json and paths\.\/f\/\{b\}\.json are the same template/,
    );
  });

  test("the router refuses them too, given operations no loader checked", () => {
    const [getPet] = operationsOf({ "/pets/{petId}": { get: op("getPet") } });
    const renamed = { ...(getPet as Operation), id: "getPetAgain", path: "/pets/{id}" };
    assert.throws(
      () => createRouter("/v1", [getPet as Operation, renamed]),
      /paths\.\/pets\/\{petId\} and paths\.\/pets\/\{id\} are the same template/,
    );
  });
});

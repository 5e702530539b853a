// Templated paths that can match one request: refused when the operations a method reaches differ
// in security (the gateway and a backend could pick different ones), reported otherwise.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { validateConfig } from "../../src/config.ts";
import { planGateway } from "../../src/plan.ts";
import { routeOverlaps } from "../../src/route-overlaps.ts";
import { ApiDescriptionError } from "../../src/startup-errors.ts";
import { loadDocument, type PathOperation, pathsDocument } from "../support/openapi-documents.ts";

type Paths = Record<string, Record<string, PathOperation>>;

const PUBLIC = { security: [] };
const KEYED = { security: [{ bearer: [] }] };
const load = (paths: Paths) => loadDocument(pathsDocument(paths));
const overlapsOf = (paths: Paths) =>
  routeOverlaps(load(paths).operations).map(({ first, second, example, conflict }) => ({
    paths: [first.path, second.path],
    example,
    conflict: conflict?.method,
  }));

const op = (operationId: string): PathOperation => ({ operationId });

const refusedAs = (pattern: RegExp) => (error: unknown) =>
  error instanceof ApiDescriptionError && pattern.test(error.message);

describe("templated paths whose security differs where both match", () => {
  test("a public path written before a private one that overlaps it stops start-up, naming both", () => {
    assert.throws(
      () =>
        load({
          "/users/{id}/profile": { get: { operationId: "getProfile", ...PUBLIC } },
          "/users/me/{section}": { get: { operationId: "getMine", ...KEYED } },
        }),
      refusedAs(
        /paths\.\/users\/\{id\}\/profile and paths\.\/users\/me\/\{section\} both match GET \/users\/me\/profile, and their security differs \(getProfile: security: \[\]; getMine: bearer\)/,
      ),
    );
  });

  test("the other way round, and with no security against security: [], it stops start-up too", () => {
    assert.throws(
      () =>
        load({
          "/users/me/{section}": { get: { operationId: "getMine", ...PUBLIC } },
          "/users/{id}/profile": { get: { operationId: "getProfile", ...KEYED } },
        }),
      refusedAs(/paths\.\/users\/me\/\{section\} and paths\.\/users\/\{id\}\/profile both match GET/),
    );
    assert.throws(
      () =>
        load({
          "/files/{name}": { get: { operationId: "getFile" } },
          "/files/{name}.json": { get: { operationId: "getJson", ...PUBLIC } },
        }),
      refusedAs(
        /both match GET \/files\/\{name\}\.json, .*\(getFile: no security; getJson: security: \[\]\)/,
      ),
    );
  });

  test("security that differs on a method only one of them has is accepted: one route can take it", () => {
    assert.deepEqual(
      overlapsOf({
        "/users/{id}/profile": { get: { operationId: "getProfile", ...PUBLIC } },
        "/users/me/{section}": { delete: { operationId: "deleteMine", ...KEYED } },
      }),
      [
        {
          paths: ["/users/{id}/profile", "/users/me/{section}"],
          example: "/users/me/profile",
          conflict: undefined,
        },
      ],
    );
  });

  test("the same requirement written in another order or at the document's level is the same security", () => {
    const document = pathsDocument({
      "/users/{id}/profile": {
        get: { operationId: "getProfile", security: [{ bearer: [] }, { other: [] }] },
      },
      "/users/me/{section}": { get: { operationId: "getMine" } },
    });
    document.security = [{ other: [] }, { bearer: [] }];
    assert.equal(routeOverlaps(loadDocument(document).operations).length, 1);
  });
});

describe("which paths overlap", () => {
  test("a static path beside a template is legal, whatever their security, and no overlap", () => {
    assert.deepEqual(
      overlapsOf({
        "/pets/{petId}": { get: { operationId: "getPet", ...KEYED } },
        "/pets/findByStatus": { get: { operationId: "findByStatus", ...PUBLIC } },
      }),
      [],
    );
  });

  test("paths that no request matches both do not overlap, whatever their security", () => {
    assert.deepEqual(
      overlapsOf({
        "/users/{id}/profile": { get: { operationId: "getProfile", ...PUBLIC } },
        "/users/{id}/posts": { get: { operationId: "getPosts", ...KEYED } },
        "/users/{id}": { get: { operationId: "getUser", ...PUBLIC } },
        "/files/{name}.json": { get: { operationId: "getJson", ...PUBLIC } },
        "/files/{name}.xml": { get: { operationId: "getXml", ...KEYED } },
        "/docs/a{name}": { get: { operationId: "getA", ...KEYED } },
        "/docs/b{name}": { get: { operationId: "getB", ...PUBLIC } },
      }),
      [],
    );
  });

  test("each overlapping pair comes with a path both match", () => {
    assert.deepEqual(
      overlapsOf({
        "/users/{id}/profile": { get: op("getProfile") },
        "/users/me/{section}": { get: op("getMine") },
        "/files/{name}.json": { get: op("getJson") },
        "/files/a{file}": { get: op("getA") },
        "/tags/{tag}/{x}": { get: op("tagged") },
        "/tags/{label}/{y}.json": { get: op("labelled") },
      }),
      [
        {
          paths: ["/users/{id}/profile", "/users/me/{section}"],
          example: "/users/me/profile",
          conflict: undefined,
        },
        {
          paths: ["/files/{name}.json", "/files/a{file}"],
          example: "/files/a{name}.json",
          conflict: undefined,
        },
        {
          paths: ["/tags/{tag}/{x}", "/tags/{label}/{y}.json"],
          example: "/tags/{tag}/{x}.json",
          conflict: undefined,
        },
      ],
    );
  });

  test("start-up and the plan warn once about the pairs they accept, naming both paths of each", () => {
    const api = load({
      "/pets/{petId}": { get: op("getPet") },
      "/users/{id}/profile": { get: op("getProfile"), delete: op("deleteProfile") },
      "/users/me/{section}": { get: op("getMine") },
    });
    const plan = planGateway({
      api,
      // The core's own warnings, whatever the policies make of the document.
      config: validateConfig({}, []),
      policies: [],
      environment: "production",
      now: Date.now,
    });
    const [warning, ...more] = plan.warnings.filter((w) => w.warning === "paths-overlap");
    assert.equal(more.length, 0);
    assert.equal(warning?.policy, undefined, "the core's own");
    assert.deepEqual(warning?.operations, ["getProfile", "deleteProfile", "getMine"]);
    assert.match(
      String(warning?.message),
      /routed literal segment first.*: \/users\/\{id\}\/profile and \/users\/me\/\{section\} \(\/users\/me\/profile\)$/,
    );
  });
});

// OpenAPI documents written for one test: files in a fresh folder, and a smallest document that
// the gateway accepts, for a test to put one schema, one server list or one $ref into; and a
// team's own description of the Pet Store, with none of the gateway's extensions.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { type ApiDescription, loadApiDescription } from "../../src/openapi.ts";
import { PROJECT_ROOT } from "../../src/project-files.ts";

/** A team's own Pet Store document: no x-gateway-*, its own security, deprecated: true undated. */
export const OWN_DOCUMENT = join(PROJECT_ROOT, "test/fixtures/openapi-own.json");

/**
 * The team's document with security the gateway cannot enforce as written: security: [] at the
 * document's level only (listPets), an anonymous {} beside bearer (createPet), and a scheme
 * components.securitySchemes does not declare (getPet). Each must fail closed.
 */
export function failClosedSecurityDocument(): Record<string, unknown> {
  const document = JSON.parse(readFileSync(OWN_DOCUMENT, "utf8"));
  document.security = [];
  delete document.paths["/pets"].get.security;
  document.paths["/pets"].post.security = [{ bearer: [] }, {}];
  document.paths["/pets/{petId}"].get.security = [{ missing: [] }];
  document.components.securitySchemes.bearer = { type: "http", scheme: "Bearer" };
  return document;
}

/**
 * The Pet Store with choices: a pet to create is described (NewPet) or imported from a registry
 * (ImportedPet), and getPet answers a pet or, for one that left, its archive entry.
 */
// biome-ignore lint/suspicious/noExplicitAny: a parsed document, edited in place
export function withChoices(d: Record<string, any>): void {
  d.components.schemas.ImportedPet = {
    type: "object",
    additionalProperties: false,
    required: ["registry", "registryId"],
    properties: { registry: { type: "string", enum: ["akc", "fci"] }, registryId: { type: "string" } },
  };
  d.components.schemas.ArchivedPet = {
    type: "object",
    required: ["id", "archivedAt"],
    properties: { id: { type: "integer" }, archivedAt: { type: "string", format: "date-time" } },
  };
  d.paths["/pets"].post.requestBody.content["application/json"].schema = {
    oneOf: [{ $ref: "#/components/schemas/NewPet" }, { $ref: "#/components/schemas/ImportedPet" }],
  };
  d.paths["/pets/{petId}"].get.responses["200"].content["application/json"].schema = {
    oneOf: [{ $ref: "#/components/schemas/Pet" }, { $ref: "#/components/schemas/ArchivedPet" }],
  };
}

/** Writes each file (text as it is, anything else as JSON) under a new folder; returns the folder. */
export function writeDocumentFiles(files: Readonly<Record<string, unknown>>): string {
  const folder = mkdtempSync(join(tmpdir(), "gw-openapi-doc-"));
  for (const [name, content] of Object.entries(files)) {
    const file = join(folder, name);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content, null, 2));
  }
  return folder;
}

export interface MinimalDocument {
  readonly openapi?: string;
  /** createPet's request body schema and its 201 answer's. */
  readonly body?: unknown;
  readonly answer?: unknown;
  readonly schemas?: Readonly<Record<string, unknown>>;
  readonly servers?: unknown;
  readonly petIdSchema?: unknown;
}

/** A document with createPet (POST /pets) and getPet (GET /pets/{petId}), the given schemas in place. */
export function minimalDocument(options: MinimalDocument = {}): Record<string, unknown> {
  const json = (schema: unknown) => ({ "application/json": { schema } });
  return {
    openapi: options.openapi ?? "3.1.0",
    info: { title: "test", version: "1" },
    servers: options.servers ?? [{ url: "https://example.com/v1" }],
    paths: {
      "/pets": {
        post: {
          operationId: "createPet",
          requestBody: { required: true, content: json(options.body ?? { type: "object" }) },
          responses: {
            "201": { description: "created", content: json(options.answer ?? { type: "object" }) },
          },
        },
      },
      "/pets/{petId}": {
        get: {
          operationId: "getPet",
          parameters: [
            {
              name: "petId",
              in: "path",
              required: true,
              schema: options.petIdSchema ?? { type: "integer", format: "int64" },
            },
          ],
          responses: { "200": { description: "the animal" } },
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
        ...options.schemas,
      },
    },
  };
}

/** The API description the gateway compiles from a document written to a file of its own. */
export function loadDocument(document: unknown, name = "openapi.json"): ApiDescription {
  const folder = writeDocumentFiles({ [name]: document });
  return loadApiDescription(join(folder, name));
}

/** An operation of pathsDocument: its id, and its own `security` when it has one. */
export interface PathOperation {
  readonly operationId: string;
  readonly security?: unknown;
}

/**
 * A document with just these paths and operations (path -> method -> operation), each `{name}`
 * declared as a string path parameter, served at /v1; security as each operation says, with a
 * bearer scheme declared.
 */
export function pathsDocument(
  paths: Readonly<Record<string, Readonly<Record<string, PathOperation>>>>,
): Record<string, unknown> {
  const document = minimalDocument();
  document.paths = Object.fromEntries(
    Object.entries(paths).map(([path, operations]) => [
      path,
      {
        parameters: (path.match(/\{[^{}]+\}/g) ?? []).map((name) => ({
          name: name.slice(1, -1),
          in: "path",
          required: true,
          schema: { type: "string" },
        })),
        ...Object.fromEntries(
          Object.entries(operations).map(([method, operation]) => [
            method,
            { ...operation, responses: { "200": { description: "the answer" } } },
          ]),
        ),
      },
    ]),
  );
  (document.components as Record<string, unknown>).securitySchemes = {
    bearer: { type: "http", scheme: "bearer" },
  };
  return document;
}

// Loads the OpenAPI description once and compiles everything the gateway needs from it:
// operations, routes, parameter specs and ajv validators. Nothing is compiled per request.
import type { ValidateFunction } from "ajv";
import { UnsupportedPatternError } from "./linear-regexp.ts";
import { isJsonMediaType, isWildcardMediaType, jsonMediaTypeOf } from "./media-types.ts";
import { accessView, addAccessKeywords, type Direction, marksAny } from "./openapi/access-views.ts";
import { basePathOf } from "./openapi/base-path.ts";
import type {
  ApiDescription,
  LoadOptions,
  MediaTypeSpec,
  Operation,
  ParameterSpec,
  RequestBodySpec,
  ResponseSpec,
  UncheckedParameter,
} from "./openapi/description.ts";
import {
  type DocumentSource,
  filesOf,
  type ReadSource,
  readDocumentSource,
  readDocumentSourceSync,
} from "./openapi/document-source.ts";
import { openapiVersion, translateSchemas30 } from "./openapi/from-3.0.ts";
import { asObject, type Json, type JsonObject } from "./openapi/json-object.ts";
import { pageSizeOf } from "./openapi/page-size.ts";
import { patternPointers } from "./openapi/pattern-pointers.ts";
import { readApiDocument } from "./openapi/read-document.ts";
import { securityOf } from "./openapi-security.ts";
import { refuseSecurityOverlaps } from "./route-overlaps.ts";
import { parseTemplate } from "./route-template.ts";
import { createRouter } from "./router.ts";
import { createSchemaValidator } from "./schema-validator.ts";
import { ApiDescriptionError } from "./startup-errors.ts";

const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
const COMPONENTS_ID = "openapi-components";

const ERROR_SCHEMA_REF = "#/components/schemas/Error";

// The description's shape, for whoever loads one.
export type * from "./openapi/description.ts";

export function loadApiDescription(file: string, options: LoadOptions = {}): ApiDescription {
  return loadDocumentVersion(file, options).api;
}

/** The description of `file`, and the snapshot of the files it was compiled from (document-source.ts). */
export function loadDocumentVersion(
  file: string,
  options: LoadOptions = {},
): { readonly api: ApiDescription; readonly source: DocumentSource } {
  let read: ReadSource;
  try {
    read = readDocumentSourceSync(file);
  } catch (error) {
    throw readError(file, error);
  }
  return { api: compileApiDocument(file, read.document, options), source: read.source };
}

/** As loadDocumentVersion, with the files read on the thread pool (a reload, while requests are served). */
export async function readDocumentVersion(
  file: string,
  options: LoadOptions = {},
): Promise<{ readonly api: ApiDescription; readonly source: DocumentSource }> {
  let read: ReadSource;
  try {
    read = await readDocumentSource(file);
  } catch (error) {
    throw readError(file, error);
  }
  return { api: compileApiDocument(file, read.document, options), source: read.source };
}

/**
 * The description of a snapshot of the document's files (read once by whoever reloads, a
 * cluster's primary): nothing is read from the file system.
 */
export function compileDocumentSource(source: DocumentSource, options: LoadOptions = {}): ApiDescription {
  let document: unknown;
  try {
    document = readApiDocument(source.file, filesOf(source));
  } catch (error) {
    throw readError(source.file, error);
  }
  return compileApiDocument(source.file, document, options);
}

function readError(file: string, error: unknown): ApiDescriptionError {
  return new ApiDescriptionError(`cannot read the OpenAPI description ${file}: ${(error as Error).message}`);
}

function compileApiDocument(file: string, document: unknown, options: LoadOptions): ApiDescription {
  try {
    return compileApiDescription(document as JsonObject, options);
  } catch (error) {
    throw new ApiDescriptionError(`OpenAPI description ${file}: ${(error as Error).message}`);
  }
}

function compileApiDescription(read: JsonObject, options: LoadOptions): ApiDescription {
  const version = openapiVersion(read.openapi);
  if (version === undefined) {
    throw new Error('"openapi" must be a 3.0.x or 3.1.x version');
  }
  // 3.0's schemas become the JSON Schema 2020-12 that 3.1's are; everything below reads 3.1.
  const document = version === "3.0" ? (translateSchemas30(read) as JsonObject) : read;
  const ajv = createSchemaValidator({ draft: "2020-12" });
  // OpenAPI annotation keywords that are not JSON Schema, and the document's own x-* extensions
  // (which may sit in any schema): they carry no validation.
  for (const keyword of ["example", "xml", "externalDocs", "discriminator", ...extensionKeywords(document)])
    ajv.addKeyword(keyword);
  addAccessKeywords(ajv);
  const components = asObject(document.components, "components") ?? {};
  const schemas = asObject(components.schemas, "components.schemas") ?? {};
  // The components as a request and as an answer see them (readOnly, writeOnly), each under an $id of its own.
  const views: Record<Direction | "either", string> = {
    either: COMPONENTS_ID,
    request: COMPONENTS_ID,
    response: COMPONENTS_ID,
  };
  ajv.addSchema({ $id: COMPONENTS_ID, $defs: rewriteRefs(schemas, COMPONENTS_ID) as JsonObject });
  for (const direction of ["request", "response"] as const) {
    if (!marksAny(document, direction)) continue;
    const id = `${COMPONENTS_ID}-${direction}`;
    const $defs: JsonObject = {};
    for (const [name, schema] of Object.entries(schemas)) {
      $defs[name] = accessView(schema, direction, schemas) as Json;
    }
    ajv.addSchema({ $id: id, $defs: rewriteRefs($defs, id) as JsonObject });
    views[direction] = id;
  }
  const compile = (schema: Json, where: string, direction?: Direction): ValidateFunction => {
    const id = views[direction ?? "either"];
    const view =
      id === COMPONENTS_ID ? schema : (accessView(schema, direction as Direction, schemas) as Json);
    try {
      return ajv.compile(rewriteRefs(view, id) as JsonObject);
    } catch (error) {
      if (error instanceof UnsupportedPatternError) {
        // The pattern is refused, not dropped: the operation would otherwise check less than it says.
        const at = patternPointers(read, error.pattern);
        const place = at.length === 0 ? "" : ` at ${at.join(", ")}`;
        throw new Error(
          `${where}: the pattern ${JSON.stringify(error.pattern)}${place} is refused: ${error.reason}`,
        );
      }
      throw new Error(`${where}: ${(error as Error).message}`);
    }
  };
  const resolve = (value: Json | undefined, where: string): JsonObject | undefined => {
    const object = asObject(value, where);
    const ref = object?.$ref;
    if (typeof ref !== "string") return object;
    const match = /^#\/components\/(\w+)\/([\w.-]+)$/.exec(ref);
    const target = match && asObject(components[match[1] as string], where)?.[match[2] as string];
    if (!target) throw new Error(`${where}: unresolved $ref ${ref}`);
    return resolve(target, ref);
  };

  const basePath = basePathOf(document.servers, options.basePath);
  const operations: Operation[] = [];
  const seenIds = new Set<string>();
  const paths = asObject(document.paths, "paths") ?? {};
  for (const [path, pathItemValue] of Object.entries(paths)) {
    if (!path.startsWith("/")) throw new Error(`paths: "${path}" must start with /`);
    // A segment the router could not match as written stops here, before its parameters are read.
    parseTemplate(path);
    const pathItem = resolve(pathItemValue, `paths.${path}`) ?? {};
    const sharedParameters = (pathItem.parameters as Json[] | undefined) ?? [];
    for (const method of HTTP_METHODS) {
      const where = `paths.${path}.${method}`;
      const operation = resolve(pathItem[method], where);
      if (!operation) continue;
      const id = operation.operationId;
      if (typeof id !== "string" || id === "") throw new Error(`${where}: operationId is required`);
      if (seenIds.has(id)) throw new Error(`${where}: operationId ${id} is used twice`);
      seenIds.add(id);

      const parameters = new Map<string, ParameterSpec>();
      const uncheckedParameters: UncheckedParameter[] = [];
      for (const [index, value] of [
        ...sharedParameters,
        ...((operation.parameters as Json[]) ?? []),
      ].entries()) {
        const parameter = resolve(value, `${where}.parameters[${index}]`) ?? {};
        const name = parameter.name;
        const location = parameter.in;
        if (typeof name !== "string") throw new Error(`${where}.parameters[${index}]: name is required`);
        if (location !== "query" && location !== "path") {
          if (location === "header" || location === "cookie") {
            uncheckedParameters.push({ name, in: location });
            continue;
          }
          throw new Error(`${where}.parameters.${name}: "in" must be query, path, header or cookie`);
        }
        const schema = resolve(parameter.schema, `${where}.parameters.${name}.schema`) ?? {};
        const parameterExtensions: Record<string, unknown> = {};
        for (const key of Object.keys(parameter))
          if (key.startsWith("x-")) parameterExtensions[key] = parameter[key];
        parameters.set(`${location}:${name}`, {
          name,
          in: location,
          required: location === "path" || parameter.required === true,
          schema,
          type: typeof schema.type === "string" ? schema.type : undefined,
          format: typeof schema.format === "string" ? schema.format : undefined,
          minimum: numberOf(schema.minimum),
          maximum: numberOf(schema.maximum),
          numericDefault: numberOf(schema.default),
          extensions: Object.freeze(parameterExtensions),
          validate: compile(schema, `${where}.parameters.${name}.schema`),
        });
      }
      const pathParameters = [...parameters.values()].filter((p) => p.in === "path");
      for (const name of path.match(/\{[^{}]+\}/g) ?? []) {
        if (!pathParameters.some((p) => `{${p.name}}` === name)) {
          throw new Error(`${where}: path parameter ${name} is not declared`);
        }
      }

      let requestBody: RequestBodySpec | undefined;
      const body = resolve(operation.requestBody, `${where}.requestBody`);
      if (body) {
        const content = asObject(body.content, `${where}.requestBody.content`) ?? {};
        const jsonType = jsonMediaTypeOf(Object.keys(content));
        const media = Object.entries(content).map(([mediaType, value]): MediaTypeSpec => {
          const entry = asObject(value, `${where}.requestBody.content`);
          const json = isJsonMediaType(mediaType);
          // Only a body read as JSON is checked against a schema; another media type passes as sent.
          const checked = entry?.schema !== undefined && (json || isWildcardMediaType(mediaType));
          return {
            mediaType,
            json,
            schema: entry?.schema,
            validate: checked
              ? compile(entry.schema as Json, `${where}.requestBody.content.${mediaType}`, "request")
              : undefined,
          };
        });
        requestBody = {
          required: body.required === true,
          mediaTypes: Object.keys(content),
          content: media,
          validate: media.find((entry) => entry.mediaType === jsonType)?.validate,
        };
      }

      const responses = new Map<string, ResponseSpec>();
      for (const [status, value] of Object.entries(
        asObject(operation.responses, `${where}.responses`) ?? {},
      )) {
        const response = resolve(value, `${where}.responses.${status}`) ?? {};
        const content = asObject(response.content, `${where}.responses.${status}.content`);
        const jsonType = content && jsonMediaTypeOf(Object.keys(content));
        const json =
          jsonType === undefined ? undefined : asObject(content?.[jsonType], `${where}.responses.${status}`);
        responses.set(status, {
          status,
          validate:
            json?.schema === undefined
              ? undefined
              : compile(json.schema, `${where}.responses.${status}`, "response"),
          schema: json?.schema,
          mediaType: json === undefined ? undefined : jsonType,
          errorObject: (json?.schema as JsonObject | undefined)?.$ref === ERROR_SCHEMA_REF,
        });
      }

      const extensions: Record<string, unknown> = {};
      for (const key of Object.keys(operation)) if (key.startsWith("x-")) extensions[key] = operation[key];
      const queryParameters = new Map(
        [...parameters.values()].filter((p) => p.in === "query").map((p) => [p.name, p] as const),
      );
      operations.push(
        Object.freeze({
          id,
          method: method.toUpperCase(),
          path,
          deprecated: operation.deprecated === true,
          extensions: Object.freeze(extensions),
          queryParameters,
          pathParameters,
          uncheckedParameters,
          security: securityOf(operation.security, document.security, components.securitySchemes, where),
          requestBody,
          responses,
          pageSize: pageSizeOf(method.toUpperCase(), queryParameters, responses.get("200"), schemas, where),
        }),
      );
    }
  }
  if (operations.length === 0) throw new Error("paths: the description declares no operation");
  // Paths that are one template, or that can match one request with different security.
  refuseSecurityOverlaps(operations);
  const errorSchema = schemas.Error;
  if (errorSchema === undefined)
    throw new Error("components.schemas.Error is required (the gateway's error bodies)");
  const byId = new Map(operations.map((operation) => [operation.id, operation]));
  const router = createRouter(basePath, operations);
  const info = asObject(document.info, "info") ?? {};
  return Object.freeze({
    title: String(info.title ?? ""),
    version: String(info.version ?? ""),
    basePath,
    operations,
    validateError: compile({ $ref: ERROR_SCHEMA_REF }, "components.schemas.Error"),
    schemas,
    operation: (id: string) => byId.get(id),
    router,
  });
}

/** The x-* member names anywhere in the document, which a schema may carry as keywords of no consequence. */
function extensionKeywords(document: JsonObject): Set<string> {
  const found = new Set<string>();
  const visit = (value: Json | undefined): void => {
    if (Array.isArray(value)) for (const item of value) visit(item);
    else if (value !== null && typeof value === "object") {
      for (const [key, child] of Object.entries(value)) {
        // ajv's own rule for a keyword's name; an x-* name outside it is no schema's keyword.
        if (/^x-[a-z0-9_$:-]*$/i.test(key)) found.add(key);
        else visit(child);
      }
    }
  };
  visit(document);
  return found;
}

function rewriteRefs(value: Json, componentsId: string): Json {
  if (Array.isArray(value)) return value.map((item) => rewriteRefs(item, componentsId));
  if (value === null || typeof value !== "object") return value;
  const out: JsonObject = {};
  for (const [key, child] of Object.entries(value)) {
    out[key] =
      key === "$ref" && typeof child === "string" && child.startsWith("#/components/schemas/")
        ? `${componentsId}#/$defs/${child.slice("#/components/schemas/".length)}`
        : rewriteRefs(child, componentsId);
  }
  return out;
}

function numberOf(value: unknown): number | undefined {
  return typeof value === "number" ? value : undefined;
}

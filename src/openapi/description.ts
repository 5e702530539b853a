// What the gateway compiles from an OpenAPI document: the shape every policy and the core read.
// Built once at start-up by loadApiDescription (src/openapi.ts); nothing here runs per request.
import type { ValidateFunction } from "ajv";
import type { OperationSecurity } from "../openapi-security.ts";
import type { Router } from "../router.ts";
import type { JsonObject } from "./json-object.ts";
import type { PageSize } from "./page-size.ts";

export type { PageSize } from "./page-size.ts";

export interface ParameterSpec {
  readonly name: string;
  readonly in: "query" | "path";
  readonly required: boolean;
  readonly schema: Readonly<JsonObject>;
  /** "integer" parameters are checked as integer literals within their format's range before the schema. */
  readonly type: string | undefined;
  readonly format: string | undefined;
  /** The schema's minimum, maximum and default, when they are numbers (the limit policy clamps to them). */
  readonly minimum: number | undefined;
  readonly maximum: number | undefined;
  readonly numericDefault: number | undefined;
  /** Every x-* extension of the parameter object (x-gateway-page-size). */
  readonly extensions: Readonly<Record<string, unknown>>;
  readonly validate: ValidateFunction;
}

export interface RequestBodySpec {
  readonly required: boolean;
  /** The keys of `content`, as written. */
  readonly mediaTypes: readonly string[];
  /** Each declared media type; a JSON one (or a wildcard) with the validator of its schema. */
  readonly content: readonly MediaTypeSpec[];
  /** The validator of the JSON media type's schema (application/json, else the first +json). */
  readonly validate: ValidateFunction | undefined;
}

export interface MediaTypeSpec {
  readonly mediaType: string;
  /** application/json or a +json type: the body is read as JSON. */
  readonly json: boolean;
  /** The schema as the document writes it ($refs unresolved), for describing it. */
  readonly schema: unknown;
  readonly validate: ValidateFunction | undefined;
}

/** A parameter the gateway does not check (header, cookie): it reaches the backend as sent. */
export interface UncheckedParameter {
  readonly name: string;
  readonly in: "header" | "cookie";
}

export interface ResponseSpec {
  readonly status: string; // "200", "4XX" or "default", as written in the document
  readonly validate: ValidateFunction | undefined;
  /** The JSON answer's schema as the document writes it ($refs unresolved). */
  readonly schema: unknown;
  /** The JSON media type whose schema that is (application/json, else the first +json one). */
  readonly mediaType: string | undefined;
  /** The answer is the interface's Error object (components.schemas.Error), whose status is the HTTP status. */
  readonly errorObject: boolean;
}

export interface Operation {
  readonly id: string;
  readonly method: string; // upper case
  readonly path: string; // template as in the document, e.g. /pets/{petId}
  readonly deprecated: boolean;
  /** Every x-* extension of the operation, for policies that read facts OpenAPI has no keyword for. */
  readonly extensions: Readonly<Record<string, unknown>>;
  readonly queryParameters: ReadonlyMap<string, ParameterSpec>;
  readonly pathParameters: readonly ParameterSpec[];
  /** Header and cookie parameters: declared, not checked. */
  readonly uncheckedParameters: readonly UncheckedParameter[];
  /** What the document asks callers to present (the auth policy decides what is enforced). */
  readonly security: OperationSecurity;
  readonly requestBody: RequestBodySpec | undefined;
  readonly responses: ReadonlyMap<string, ResponseSpec>;
  /**
   * The query parameter that is the page size (x-gateway-page-size, or the name rule), or why a
   * list has none; undefined where the question does not arise (src/openapi/page-size.ts).
   */
  readonly pageSize: PageSize | undefined;
}

export interface ApiDescription {
  readonly title: string;
  readonly version: string;
  /** The public base path: the gateway config's, else the path of the server URLs (e.g. "/v1"). */
  readonly basePath: string;
  readonly operations: readonly Operation[];
  readonly validateError: ValidateFunction;
  /** components.schemas as the document writes them, to follow a schema's $ref when describing it. */
  readonly schemas: Readonly<Record<string, unknown>>;
  operation(id: string): Operation | undefined;
  /**
   * (method, public path) -> operation, compiled once with the document: the pipeline routes
   * every request with it, and a policy that must know whether a request would route (a CORS
   * preflight) asks the same one.
   */
  readonly router: Router;
}

export interface LoadOptions {
  /** The gateway config's base path, which wins over the servers' (undefined: read the servers). */
  readonly basePath?: string | undefined;
}

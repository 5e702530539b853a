// What the document says an operation's callers must present: its own `security`, else the
// document's, with each named scheme looked up in components.securitySchemes. Read here as the
// document states it; what the gateway makes of it (a bearer key, always, unless the operation
// itself says `security: []`) is the auth policy's decision.

import { isJsonObject, type Json } from "./openapi/json-object.ts";

export interface SecurityScheme {
  /** The name the requirement uses (a key of components.securitySchemes). */
  readonly name: string;
  /** http, apiKey, oauth2, openIdConnect, mutualTLS; undefined when components declares no such scheme. */
  readonly type: string | undefined;
  /** For type http: the scheme, lower case (bearer, basic, ...). */
  readonly scheme: string | undefined;
}

export interface OperationSecurity {
  /** Where the requirement comes from: the operation's own `security`, the document's, or nowhere. */
  readonly declaredBy: "operation" | "document" | "none";
  /**
   * The alternatives, any one of which satisfies the requirement, each a list of schemes that must
   * all be presented. [] is `security: []` (no requirement); an empty alternative is `{}` (anonymous).
   */
  readonly alternatives: readonly (readonly SecurityScheme[])[];
}

/** The security requirement of one operation, checked for shape (throws naming `where`). */
export function securityOf(
  operationSecurity: Json | undefined,
  documentSecurity: Json | undefined,
  securitySchemes: Json | undefined,
  where: string,
): OperationSecurity {
  const declaredBy =
    operationSecurity !== undefined ? "operation" : documentSecurity !== undefined ? "document" : "none";
  const requirement = operationSecurity ?? documentSecurity;
  if (requirement === undefined) return { declaredBy, alternatives: [] };
  const place = declaredBy === "operation" ? `${where}.security` : "security";
  if (!Array.isArray(requirement)) throw new Error(`${place} must be an array`);
  const schemes = isJsonObject<Json>(securitySchemes) ? securitySchemes : {};
  const alternatives = requirement.map((alternative, index) => {
    if (!isJsonObject<Json>(alternative)) throw new Error(`${place}[${index}] must be an object`);
    return Object.keys(alternative).map((name): SecurityScheme => {
      const declared = schemes[name];
      const scheme = isJsonObject<Json>(declared) ? declared : undefined;
      return {
        name,
        type: typeof scheme?.type === "string" ? scheme.type : undefined,
        scheme: typeof scheme?.scheme === "string" ? scheme.scheme.toLowerCase() : undefined,
      };
    });
  });
  return { declaredBy, alternatives };
}

// OpenAPI 3.0 schemas are a dialect of JSON Schema draft 4; the compiler reads 3.1's, which are
// JSON Schema 2020-12. Where the two mean different things to a validator, the 3.0 form is
// rewritten into the 2020-12 form that accepts and refuses the same instances:
//   nullable: true            -> "null" added to type (and to enum), or `anyOf [schema, null]`
//   exclusiveMinimum: true    -> exclusiveMinimum: <minimum> (a number, as 2020-12 has it)
//   $ref with other members   -> the $ref alone (3.0 ignores the rest; 2020-12 would apply it)
// `example` needs nothing: the compiler accepts it as an annotation, in 3.0 and 3.1 alike.
// Nothing else a validator reads differs: type, format (int64 stays the exact check the
// parameters and the body parser make), enum, bounds, required, properties, items, allOf, ...

import { isJsonObject } from "./json-object.ts";

type JsonObject = { [key: string]: unknown };

/** Members of a $ref's object that say something of the place, not the schema; kept for the access views. */
const KEPT_BESIDE_REF = new Set(["readOnly", "writeOnly", "description", "title", "deprecated"]);
/** Annotations that stay on the outside when a nullable schema is wrapped, where a reader looks for them. */
const ANNOTATIONS = ["readOnly", "writeOnly", "description", "title", "deprecated", "default", "example"];
const SUBSCHEMA = new Set(["items", "additionalProperties", "not"]);
const SUBSCHEMA_LISTS = new Set(["allOf", "anyOf", "oneOf"]);
const SUBSCHEMA_MAPS = new Set(["properties", "patternProperties"]);

/** Whether `openapi` names a 3.0 document, a 3.1 one, or neither (undefined). */
export function openapiVersion(value: unknown): "3.0" | "3.1" | undefined {
  if (typeof value !== "string") return undefined;
  if (/^3\.0\.\d+$/.test(value)) return "3.0";
  if (/^3\.1\.\d+$/.test(value)) return "3.1";
  return undefined;
}

/**
 * The document with every schema in its 2020-12 form: components.schemas and every `schema` of
 * a parameter, header or media type, wherever it is. A parameter's own `nullable` is dropped: a
 * parameter arrives as text, and "null" is never what it holds.
 */
export function translateSchemas30(document: JsonObject): JsonObject {
  return walkDocument(document, []) as JsonObject;
}

function walkDocument(value: unknown, path: readonly string[]): unknown {
  if (Array.isArray(value)) return value.map((item) => walkDocument(item, path));
  if (!isJsonObject(value)) return value;
  const out: JsonObject = {};
  const inComponentSchemas = path.length === 2 && path[0] === "components" && path[1] === "schemas";
  for (const [key, child] of Object.entries(value)) {
    if (key.startsWith("x-") || key === "example" || key === "examples") out[key] = child;
    else if (inComponentSchemas) out[key] = translateSchema(child);
    else if (key === "schema") {
      // A parameter (it has "in") is text on the wire: its own nullable would only make its type a list.
      const parameter = typeof value.in === "string" && isJsonObject(child);
      out[key] = translateSchema(parameter ? { ...child, nullable: false } : child);
    } else out[key] = walkDocument(child, [...path, key]);
  }
  return out;
}

/** One 3.0 schema as 2020-12. */
function translateSchema(value: unknown): unknown {
  if (!isJsonObject(value)) return value;
  if (typeof value.$ref === "string") {
    const out: JsonObject = { $ref: value.$ref };
    for (const key of KEPT_BESIDE_REF) if (key in value) out[key] = value[key];
    return value.nullable === true ? orNull(out) : out;
  }
  const out: JsonObject = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === "nullable") continue;
    if (SUBSCHEMA.has(key)) out[key] = translateSchema(child);
    else if (SUBSCHEMA_LISTS.has(key) && Array.isArray(child)) out[key] = child.map(translateSchema);
    else if (SUBSCHEMA_MAPS.has(key) && isJsonObject(child)) {
      const map: JsonObject = {};
      for (const [name, schema] of Object.entries(child)) map[name] = translateSchema(schema);
      out[key] = map;
    } else out[key] = child;
  }
  exclusiveBound(out, "exclusiveMinimum", "minimum");
  exclusiveBound(out, "exclusiveMaximum", "maximum");
  return value.nullable === true ? nullable(out) : out;
}

/** 3.0's boolean form: `minimum: 5, exclusiveMinimum: true` is 2020-12's `exclusiveMinimum: 5`. */
function exclusiveBound(schema: JsonObject, exclusive: string, bound: string): void {
  if (typeof schema[exclusive] !== "boolean") return;
  if (schema[exclusive] === true && typeof schema[bound] === "number") {
    schema[exclusive] = schema[bound];
    delete schema[bound];
  } else {
    delete schema[exclusive];
  }
}

/** A schema with nullable: true, which also accepts null. */
function nullable(schema: JsonObject): JsonObject {
  if (Array.isArray(schema.enum) && !schema.enum.includes(null)) schema.enum = [...schema.enum, null];
  if (typeof schema.type === "string") {
    schema.type = [schema.type, "null"];
    return schema;
  }
  // Without a type, null is refused only by what a $ref or a composition asks: the common
  // `nullable: true, allOf: [{$ref}]` means "that schema, or null".
  if ("allOf" in schema || "anyOf" in schema || "oneOf" in schema) return orNull(schema);
  return schema;
}

function orNull(schema: JsonObject): JsonObject {
  const inner: JsonObject = { ...schema };
  const out: JsonObject = {};
  for (const key of ANNOTATIONS) {
    if (key in inner) {
      out[key] = inner[key];
      delete inner[key];
    }
  }
  return { anyOf: [inner, { type: "null" }], ...out };
}

// A document's schema in a few words, for the plan ("NewPet: object {name*: string, ...}"), and
// the one-step $ref lookup that reading a schema's shape needs (components.schemas only).

import { isJsonObject } from "./openapi/json-object.ts";

const COMPONENT_SCHEMA = "#/components/schemas/";
const MAX_PROPERTIES = 12;

type Schemas = Readonly<Record<string, unknown>>;

/** The schema a `#/components/schemas/X` $ref names, followed until it is not a $ref (undefined when unknown). */
export function resolveSchema(schema: unknown, schemas: Schemas): Record<string, unknown> | undefined {
  let current = schema;
  for (let hops = 0; hops < 16; hops++) {
    if (!isJsonObject(current)) return undefined;
    const ref = current.$ref;
    if (typeof ref !== "string") return current;
    if (!ref.startsWith(COMPONENT_SCHEMA)) return undefined;
    current = schemas[ref.slice(COMPONENT_SCHEMA.length)];
  }
  return undefined;
}

/**
 * The schema and every schema it is composed of, each once: its $ref followed, each `allOf` member
 * (all must hold, so what each says of the shape holds), and the schema of 3.0's `nullable`
 * (`anyOf: [the schema, {type: "null"}]` once translated). oneOf and anyOf alternatives are not
 * followed: no one of them is sure to hold.
 */
function composition(schema: unknown, schemas: Schemas): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  const seen = new Set<unknown>();
  const visit = (value: unknown): void => {
    const resolved = resolveSchema(value, schemas);
    if (resolved === undefined || seen.has(resolved)) return;
    seen.add(resolved);
    found.push(resolved);
    if (Array.isArray(resolved.allOf)) for (const member of resolved.allOf) visit(member);
    for (const keyword of ["anyOf", "oneOf"]) {
      const nullable = nullableOf(resolved[keyword]);
      if (nullable !== undefined) visit(nullable);
    }
  };
  visit(schema);
  return found;
}

/** The schema of `[the schema, {type: "null"}]`, as 3.0's nullable is translated; undefined for any other list. */
function nullableOf(list: unknown): unknown {
  if (!Array.isArray(list) || list.length !== 2) return undefined;
  const others = list.filter((member) => !(isJsonObject(member) && member.type === "null"));
  return others.length === 1 ? others[0] : undefined;
}

/**
 * Whether the schema (through $ref and allOf) offers alternatives, oneOf or anyOf, which
 * propertiesOf does not read: where its properties are, nothing can tell before a value comes.
 */
export function hasAlternatives(schema: unknown, schemas: Schemas): boolean {
  return composition(schema, schemas).some((part) =>
    ["oneOf", "anyOf"].some(
      (keyword) => Array.isArray(part[keyword]) && nullableOf(part[keyword]) === undefined,
    ),
  );
}

/**
 * The properties of an object schema, read through its $ref and its allOf members (the first
 * place that names a property gives its schema; a second one joins it as an allOf), or undefined
 * when no part of it declares properties.
 */
export function propertiesOf(schema: unknown, schemas: Schemas): Record<string, unknown> | undefined {
  let properties: Record<string, unknown> | undefined;
  for (const part of composition(schema, schemas)) {
    if (!isJsonObject(part.properties)) continue;
    properties ??= {};
    for (const [name, value] of Object.entries(part.properties)) {
      const before = properties[name];
      properties[name] = before === undefined ? value : { allOf: [before, value] };
    }
  }
  return properties;
}

/** The items of an array schema (after its $ref, through allOf), or undefined when it is not one. */
export function arrayItemsOf(schema: unknown, schemas: Schemas): unknown {
  const parts = composition(schema, schemas);
  const array = parts.some(
    (part) => part.type === "array" || (Array.isArray(part.type) && part.type.includes("array")),
  );
  if (!array) return undefined;
  return parts.find((part) => part.items !== undefined)?.items ?? {};
}

/** Whether a property is readOnly (or writeOnly), on itself, on the schema its $ref names or in an allOf member. */
export function isMarked(schema: unknown, flag: "readOnly" | "writeOnly", schemas: Schemas): boolean {
  return (
    (isJsonObject(schema) && schema[flag] === true) ||
    composition(schema, schemas).some((part) => part[flag] === true)
  );
}

/**
 * The schema in brief: its component name, then its shape one level deep. As a request body, a
 * readOnly property is shown as refused and not required, as the request validation reads it.
 */
export function describeSchema(schema: unknown, schemas: Schemas, asRequest = false): string {
  const name = refName(schema);
  const resolved = resolveSchema(schema, schemas);
  if (resolved === undefined) return name ?? "a schema the plan cannot read";
  const shape = shapeOf(resolved, schemas, 1, asRequest);
  return name === undefined ? shape : `${name}: ${shape}`;
}

function shapeOf(
  schema: Record<string, unknown>,
  schemas: Schemas,
  depth: number,
  asRequest = false,
): string {
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}`;
  const type = Array.isArray(schema.type) ? schema.type.join(" or ") : schema.type;
  if (type === "array") return `array of ${inner(schema.items, schemas, depth)}`;
  if (type === "object" || isJsonObject(schema.properties)) {
    if (depth <= 0) return "object";
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const entries = Object.entries(isJsonObject(schema.properties) ? schema.properties : {});
    const shown = entries.slice(0, MAX_PROPERTIES).map(([key, value]) => {
      if (asRequest && isMarked(value, "readOnly", schemas)) return `${key} (read-only, refused)`;
      return `${key}${required.has(key) ? "*" : ""}: ${inner(value, schemas, depth - 1)}`;
    });
    if (entries.length > MAX_PROPERTIES) shown.push(`… ${entries.length - MAX_PROPERTIES} more`);
    const closed = schema.additionalProperties === false ? ", nothing else" : "";
    return `object {${shown.join(", ")}}${closed}`;
  }
  if (typeof type === "string")
    return typeof schema.format === "string" ? `${type} (${schema.format})` : type;
  for (const keyword of ["oneOf", "anyOf", "allOf"]) {
    const list = schema[keyword];
    if (Array.isArray(list)) return `${keyword} of ${list.map((s) => inner(s, schemas, 0)).join(", ")}`;
  }
  return "any value";
}

function inner(schema: unknown, schemas: Schemas, depth: number): string {
  const name = refName(schema);
  if (name !== undefined) return name;
  return isJsonObject(schema) ? shapeOf(schema, schemas, depth) : "any value";
}

function refName(schema: unknown): string | undefined {
  const ref = isJsonObject(schema) ? schema.$ref : undefined;
  if (typeof ref !== "string") return undefined;
  return ref.startsWith(COMPONENT_SCHEMA) ? ref.slice(COMPONENT_SCHEMA.length) : ref;
}

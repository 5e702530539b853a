// One `Pet` schema usually serves both ways: its `id` is required and `readOnly` (the service
// assigns it), a `password` is `writeOnly`. OpenAPI says a readOnly property is not sent in a
// request, and its `required` counts for responses only; writeOnly is the mirror image. So a
// request body is checked against the request view of its schema, where readOnly properties are
// not required and are refused when sent; an answer against the response view, with writeOnly
// properties in that place. 3.0 and 3.1 documents alike.
import { _, type Ajv } from "ajv";
import type { Ajv2020 } from "ajv/dist/2020.js";
import { isJsonObject } from "./json-object.ts";

type JsonObject = { [key: string]: unknown };

export type Direction = "request" | "response";

/**
 * What a refused property's schema becomes in a view: a keyword that always fails. Its name is
 * what the response contract counts a violation by (`schema:writeOnlyProperty`).
 */
const REFUSED: Readonly<Record<Direction, string>> = {
  request: "readOnlyProperty",
  response: "writeOnlyProperty",
};
const FLAG: Readonly<Record<Direction, "readOnly" | "writeOnly">> = {
  request: "readOnly",
  response: "writeOnly",
};
const REASON: Readonly<Record<Direction, string>> = {
  request: "is read-only: the service sets it, a request must not send it",
  response: "is write-only: an answer must not carry it",
};
const SUBSCHEMA = ["items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames"];
const SUBSCHEMA_LISTS = ["allOf", "anyOf", "oneOf", "prefixItems"];
const COMPONENT_REF = "#/components/schemas/";

/** Teaches ajv the keywords the views use. */
export function addAccessKeywords(ajv: Ajv | Ajv2020): void {
  for (const direction of ["request", "response"] as const) {
    ajv.addKeyword({
      keyword: REFUSED[direction],
      schemaType: "boolean",
      error: { message: REASON[direction] },
      code(cxt) {
        cxt.fail(_`true`);
      },
    });
  }
}

/** Whether any schema of the document marks a property for this direction: otherwise a view is the schema itself. */
export function marksAny(schemas: unknown, direction: Direction): boolean {
  const flag = FLAG[direction];
  const visit = (value: unknown): boolean => {
    if (Array.isArray(value)) return value.some(visit);
    if (!isJsonObject(value)) return false;
    return value[flag] === true || Object.values(value).some(visit);
  };
  return visit(schemas);
}

/**
 * `schema` as the request or the response sees it. `components` are the document's
 * components.schemas, through which a $ref'd property or allOf member is looked at.
 */
export function accessView(schema: unknown, direction: Direction, components: JsonObject): unknown {
  return new View(direction, components).of(schema, new Set());
}

class View {
  readonly #flag: "readOnly" | "writeOnly";
  readonly #refused: JsonObject;
  readonly #components: JsonObject;
  readonly #hiddenNames = new Map<string, ReadonlySet<string>>();

  constructor(direction: Direction, components: JsonObject) {
    this.#flag = FLAG[direction];
    this.#refused = { [REFUSED[direction]]: true };
    this.#components = components;
  }

  /** The view of one schema; `inherited` are names an enclosing allOf hides, which its members must not require. */
  of(schema: unknown, inherited: ReadonlySet<string>): unknown {
    if (Array.isArray(schema)) return schema.map((item) => this.of(item, new Set()));
    if (!isJsonObject(schema)) return schema;
    const hidden = new Set([...inherited, ...this.#hiddenIn(schema, new Set())]);
    const out: JsonObject = {};
    for (const [key, child] of Object.entries(schema)) {
      if (key === "properties" && isJsonObject(child)) {
        const properties: JsonObject = {};
        for (const [name, property] of Object.entries(child)) {
          properties[name] = this.#hides(property, new Set()) ? this.#refused : this.of(property, new Set());
        }
        out[key] = properties;
      } else if (key === "required" && Array.isArray(child)) {
        out[key] = child.filter((name) => !hidden.has(name as string));
      } else if (SUBSCHEMA_LISTS.includes(key) && Array.isArray(child)) {
        // The members of allOf, anyOf and oneOf check the same object: what it hides, they do not require.
        out[key] = child.map((member) => this.of(member, key === "prefixItems" ? new Set() : hidden));
      } else if (SUBSCHEMA.includes(key)) {
        out[key] = this.of(child, new Set());
      } else if ((key === "patternProperties" || key === "$defs") && isJsonObject(child)) {
        const map: JsonObject = {};
        for (const [name, sub] of Object.entries(child)) map[name] = this.of(sub, new Set());
        out[key] = map;
      } else {
        out[key] = child;
      }
    }
    return out;
  }

  /** Whether a property's schema carries the flag, itself, through its $ref or through an allOf member. */
  #hides(schema: unknown, seen: Set<string>): boolean {
    if (!isJsonObject(schema)) return false;
    if (schema[this.#flag] === true) return true;
    const target = this.#component(schema.$ref, seen);
    if (target !== undefined && this.#hides(target, seen)) return true;
    return Array.isArray(schema.allOf) && schema.allOf.some((member) => this.#hides(member, seen));
  }

  /** The property names an object schema hides: its own, and those of the schemas its allOf includes. */
  #hiddenIn(schema: JsonObject, seen: Set<string>): ReadonlySet<string> {
    const names = new Set<string>();
    if (isJsonObject(schema.properties)) {
      for (const [name, property] of Object.entries(schema.properties)) {
        if (this.#hides(property, new Set())) names.add(name);
      }
    }
    const members = [...(Array.isArray(schema.allOf) ? schema.allOf : [])];
    const ref = schema.$ref;
    if (typeof ref === "string") members.push({ $ref: ref });
    for (const member of members) {
      if (!isJsonObject(member)) continue;
      const name = typeof member.$ref === "string" ? member.$ref : undefined;
      const known = name === undefined ? undefined : this.#hiddenNames.get(name);
      if (known !== undefined) {
        for (const hidden of known) names.add(hidden);
        continue;
      }
      const target = name === undefined ? member : this.#component(name, seen);
      if (target === undefined) continue;
      const found = this.#hiddenIn(target, seen);
      if (name !== undefined) this.#hiddenNames.set(name, found);
      for (const hidden of found) names.add(hidden);
    }
    return names;
  }

  /** The component a local $ref names, once per walk: a recursive schema ends the walk. */
  #component(ref: unknown, seen: Set<string>): JsonObject | undefined {
    if (typeof ref !== "string" || !ref.startsWith(COMPONENT_REF) || seen.has(ref)) return undefined;
    seen.add(ref);
    const target = this.#components[ref.slice(COMPONENT_REF.length)];
    return isJsonObject(target) ? target : undefined;
  }
}

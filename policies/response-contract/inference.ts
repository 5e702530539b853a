// The rules a document implies where it states none: a page no longer than the operation's page
// size (a fact of the document: src/openapi/page-size.ts), a filter by an enum query parameter
// named like a property of the listed items, the item a path parameter names (petId -> id), and a
// POST whose 201 holds every property of its request. Schemas are read through $ref and allOf; a
// schema whose properties hide behind oneOf or anyOf is named as not read, for the plan to say.
// A guess is not a promise of the interface: an inferred rule is only ever reported, whatever the
// operation's mode, until the config or the document states it.
import type { ApiDescription, Operation } from "../../src/openapi.ts";
import { arrayItemsOf, hasAlternatives, isMarked, propertiesOf } from "../../src/schema-brief.ts";
import type { RuleEntry } from "./plan.ts";

/** The rules inferred for an operation. */
export function inferRules(operation: Operation, api: ApiDescription): RuleEntry[] {
  return inference(operation, api).rules;
}

/**
 * The rules inferred for an operation, and the schemas a rule would have been read from whose
 * properties could not be read ("its 200 answer"): no rule was inferred from those.
 */
export function inference(
  operation: Operation,
  api: ApiDescription,
): { readonly rules: RuleEntry[]; readonly unread: string[] } {
  const rules: RuleEntry[] = [];
  const unread: string[] = [];
  /** The properties of a schema, noting it as unread when they hide behind alternatives. */
  const read = (schema: unknown, what: string): Record<string, unknown> => {
    const properties = propertiesOf(schema, api.schemas);
    if (properties === undefined && hasAlternatives(schema, api.schemas)) unread.push(what);
    return properties ?? {};
  };
  const ok = operation.responses.get("200");
  const okSchema = ok?.validate === undefined ? undefined : ok.schema;
  const items = okSchema === undefined ? undefined : arrayItemsOf(okSchema, api.schemas);
  if (operation.method === "GET" && items !== undefined) {
    const pageSize = operation.pageSize?.parameter;
    if (pageSize !== undefined) rules.push({ rule: "page-size", status: "200", parameter: pageSize });
    const filters = [...operation.queryParameters.values()].filter((spec) => Array.isArray(spec.schema.enum));
    const itemProperties = filters.length === 0 ? {} : read(items, "the items of its 200 answer");
    for (const spec of filters) {
      if (Object.hasOwn(itemProperties, spec.name)) {
        rules.push({ rule: "filter", status: "200", parameter: spec.name, field: spec.name });
      }
    }
  }
  const identity = operation.pathParameters.at(-1);
  if (operation.method === "GET" && identity && okSchema !== undefined && items === undefined) {
    const properties = read(okSchema, "its 200 answer");
    const field = Object.hasOwn(properties, identity.name)
      ? identity.name
      : /^[A-Za-z0-9]+(?:Id|_id|ID)$/.test(identity.name) && Object.hasOwn(properties, "id")
        ? "id"
        : undefined;
    if (field) rules.push({ rule: "identity", status: "200", parameter: identity.name, field });
  }
  const created = operation.responses.get("201");
  const body = operation.requestBody?.content.find((entry) => entry.json && entry.validate !== undefined);
  if (operation.method === "POST" && created?.validate !== undefined && body) {
    // What a request may send: a readOnly property is refused there, so it is never echoed.
    const sent = Object.entries(read(body.schema, "its request body"))
      .filter(([, schema]) => !isMarked(schema, "readOnly", api.schemas))
      .map(([name]) => name);
    const answered = read(created.schema, "its 201 answer");
    if (sent.length > 0 && sent.every((name) => Object.hasOwn(answered, name))) {
      rules.push({ rule: "echo", status: "201", fields: sent });
    }
  }
  return { rules, unread };
}

/** The config line that states inferred rules, so that they are checked in the operation's own mode. */
export function confirmingLine(operation: string, rules: readonly RuleEntry[]): string {
  return `"policies": ${JSON.stringify({ responseContract: { rules: { [operation]: rules } } })}`;
}

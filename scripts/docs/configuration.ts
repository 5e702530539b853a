// docs/reference/configuration.md: every field of the gateway config, read from the JSON Schema
// the config is validated against (src/config-schema.ts, with each policy's options schema under
// policies.<name>), and the environment variable that sets it (src/config.ts).
import { relative } from "node:path";
import { CORE_ENVIRONMENT } from "../../src/config.ts";
import { configSchema } from "../../src/config-schema.ts";
import type { AnyPolicyDefinition } from "../../src/policy-registry.ts";
import { DEFAULT_OPENAPI_FILE, PROJECT_ROOT } from "../../src/project-files.ts";
import { code, json, page, table } from "./markdown.ts";

interface Schema {
  readonly type?: string;
  readonly description?: string;
  readonly default?: unknown;
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly anyOf?: readonly Schema[];
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly pattern?: string;
  readonly format?: string;
  readonly uniqueItems?: boolean;
  readonly items?: Schema;
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly required?: readonly string[];
  readonly propertyNames?: Schema;
  readonly additionalProperties?: Schema | boolean;
}

const INTRO = `Every setting of the gateway config, with its type, default, allowed values and the environment
variable that sets it, generated from the JSON Schema the config is validated against (\`src/config-schema.ts\`,
and the options schema of each policy under \`policies.<name>\`). The config file is \`config/gateway.json\`, or the
file the environment variable \`GATEWAY_CONFIG\` names; an environment variable overrides the file's field, and a
value of digits only is read as a number. Unknown keys and bad values are refused at start-up with one line naming
the field, before anything listens. Fields are named by their path in the file: \`server.maxConnections\` is
\`{"server": {"maxConnections": …}}\`.`;

export function configurationPage(policies: readonly AnyPolicyDefinition[]): string {
  const environment = environmentVariables(policies);
  const listed = new Set<string>();
  const sections: string[] = [];
  const visit = (path: string, schema: Schema) => {
    const fields: string[][] = [];
    const subsections: [string, Schema][] = [];
    for (const [name, field] of Object.entries(schema.properties ?? {})) {
      const fieldPath = path === "" ? name : `${path}.${name}`;
      if (isSection(field)) subsections.push([fieldPath, field]);
      else {
        fields.push(row(fieldPath, field, environment));
        listed.add(pointerOf(fieldPath));
      }
    }
    const parts = [`## ${path === "" ? "Top level" : path}`];
    if (path !== "") parts.push(`${described(path, schema)}.`);
    if (fields.length > 0) {
      parts.push(
        table(["Field", "Type", "Default", "Allowed", "Environment variable", "Description"], fields),
      );
    }
    sections.push(parts.join("\n\n"));
    for (const [subPath, sub] of subsections) visit(subPath, sub);
  };
  visit("", configSchema(policies) as Schema);
  // A variable whose field is not in the schema would be missing from the page without a word.
  for (const [pointer, variable] of environment) {
    if (!listed.has(pointer))
      throw new Error(`${variable} sets ${pointer}, which is no field of the config schema`);
  }
  return page("Configuration reference", INTRO, sections);
}

/** A group of settings with a heading of its own (upstream, policies.auth), not a field with an object value. */
function isSection(schema: Schema): boolean {
  return schema.type === "object" && schema.properties !== undefined;
}

function row(path: string, schema: Schema, environment: ReadonlyMap<string, string>): string[] {
  const variable = environment.get(pointerOf(path));
  return [
    code(path),
    typeOf(schema),
    defaultOf(path, schema),
    allowedOf(schema) ?? "—",
    variable === undefined ? "—" : code(variable),
    `${described(path, schema)}`,
  ];
}

function pointerOf(path: string): string {
  return `/${path.replaceAll(".", "/")}`;
}

function described(path: string, schema: Schema): string {
  if (typeof schema.description !== "string" || schema.description === "") {
    throw new Error(`${path} has no description in its schema: the configuration reference needs one`);
  }
  return schema.description;
}

/** JSON pointer of a field -> the environment variable that sets it: the core's and each policy's. */
function environmentVariables(policies: readonly AnyPolicyDefinition[]): Map<string, string> {
  const byPointer = new Map<string, string>();
  for (const [variable, pointer] of Object.entries(CORE_ENVIRONMENT)) byPointer.set(pointer, variable);
  for (const policy of policies) {
    for (const [variable, option] of Object.entries(policy.environment ?? {})) {
      byPointer.set(`/policies/${policy.name}/${option}`, variable);
    }
  }
  return byPointer;
}

function defaultOf(path: string, schema: Schema): string {
  if (schema.default === undefined) return "—";
  // Resolved against the project when the config loads: the page says where, not this machine's path.
  if (path === "openapi" && schema.default === DEFAULT_OPENAPI_FILE) {
    return code(relative(PROJECT_ROOT, DEFAULT_OPENAPI_FILE));
  }
  return json(schema.default);
}

function typeOf(schema: Schema): string {
  if (schema.anyOf !== undefined && schema.type === undefined) {
    return [...new Set(schema.anyOf.map(typeOf))].join(" or ");
  }
  if (schema.const !== undefined) return jsonType(schema.const);
  if (schema.type === undefined && schema.enum !== undefined) {
    return [...new Set(schema.enum.map(jsonType))].join(" or ");
  }
  if (schema.type === "array") {
    const items = schema.items === undefined ? "any" : typeOf(schema.items);
    return items === "object" ? "array of objects" : `array of ${items}`;
  }
  return schema.type ?? "any";
}

function jsonType(value: unknown): string {
  if (Array.isArray(value)) return "array";
  if (value === null) return "null";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** What a value may be, in words: "100 to 4000", "one of `pass`, `replace`", "matching `^…$`". */
function allowedOf(schema: Schema): string | undefined {
  const words: string[] = [];
  if (schema.const !== undefined) words.push(json(schema.const));
  if (schema.enum !== undefined)
    words.push(`one of ${schema.enum.map((value) => code(String(value))).join(", ")}`);
  if (schema.minimum !== undefined && schema.maximum !== undefined) {
    words.push(`${schema.minimum} to ${schema.maximum}`);
  } else if (schema.minimum !== undefined) words.push(`at least ${schema.minimum}`);
  else if (schema.maximum !== undefined) words.push(`at most ${schema.maximum}`);
  if (schema.minLength === 1) words.push("not empty");
  else if (schema.minLength !== undefined) words.push(`at least ${schema.minLength} characters`);
  if (schema.format !== undefined) words.push(`a ${schema.format}`);
  if (schema.pattern !== undefined) words.push(`matching ${code(schema.pattern)}`);
  if (schema.anyOf !== undefined) {
    // A branch that says what it is in words (an origin, an address range) is named by them.
    const branches = schema.anyOf.map((branch) => branch.description ?? allowedOf(branch) ?? typeOf(branch));
    words.push(branches.join(", or "));
  }
  if (schema.type === "array" && schema.items !== undefined) {
    const each = itemsOf(schema.items);
    if (each !== undefined) words.push(`each ${each}`);
  }
  if (schema.uniqueItems === true) words.push("no value twice");
  if (schema.propertyNames?.pattern !== undefined)
    words.push(`keys matching ${code(schema.propertyNames.pattern)}`);
  if (typeof schema.additionalProperties === "object") {
    const values = allowedOf(schema.additionalProperties);
    if (values !== undefined) words.push(`values ${values}`);
  }
  return words.length === 0 ? undefined : words.join("; ");
}

/** What each item of an array may be: its words, or for an object each member's. */
function itemsOf(items: Schema): string | undefined {
  if (items.properties === undefined) return allowedOf(items);
  const required = new Set(items.required ?? []);
  const members = Object.entries(items.properties).map(([name, member]) => {
    const words = [typeOf(member), allowedOf(member), required.has(name) ? "required" : undefined];
    return `${code(name)} (${words.filter((word) => word !== undefined).join(", ")})`;
  });
  return `an object of ${members.join(", ")}`;
}

// The config's TypeScript shape and its JSON Schema are one truth (src/config-schema.ts): the
// schema is typed JSONSchemaType<GatewayConfig>, so a setting of the interface the schema lacks,
// or types differently, or makes optional on one side only, does not compile. What that type
// lets through is held here: a property the schema lists and the interface lacks (checked by the
// compiler, in `npm run typecheck`), and a setting the interface says is always there that an
// empty file would leave out (checked on the validated config).
import assert from "node:assert/strict";
import { test } from "node:test";
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import { configSchema, type GatewayConfig } from "../../src/config-schema.ts";

/** The dotted names of the properties a schema lists that its type does not have, at any depth. */
type OnlyInSchema<Schema, Type, Path extends string = ""> = Schema extends {
  readonly properties: infer Fields;
}
  ? {
      [Name in keyof Fields & string]: Name extends keyof Type
        ? OnlyInSchema<Fields[Name], NonNullable<Type[Name]>, `${Path}${Name}.`>
        : `${Path}${Name}`;
    }[keyof Fields & string]
  : never;

/** Compiles only for `never`: the error names what is left. */
function noneOf<Names extends never>(): Names[] {
  return [];
}

// A setting added to the schema and not to GatewayConfig: "Type '"server.newSetting"' does not
// satisfy the constraint 'never'".
noneOf<OnlyInSchema<ReturnType<typeof configSchema>, GatewayConfig>>();

interface FieldSchema {
  readonly default?: unknown;
  readonly nullable?: boolean;
  readonly properties?: Readonly<Record<string, FieldSchema>>;
}

/**
 * Walks a section of the schema beside the same section of a config validated from an empty file:
 * JSONSchemaType makes a setting `nullable` exactly where the interface lets it be unset, so any
 * other setting must come out of validation present: by its default, or as a section filled with
 * its own fields' defaults.
 */
function assertWhole(schema: FieldSchema, value: object, path: string): void {
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const where = `${path}${name}`;
    const setting: unknown = Reflect.get(value, name);
    if (field.nullable === true) {
      assert.equal(setting, field.default, `${where} may be unset: absent unless it has a default`);
    } else if (field.default !== undefined && field.properties === undefined) {
      assert.deepEqual(setting, field.default, `${where} is its default`);
    } else {
      assert.ok(
        field.properties !== undefined,
        `${where} is always there by GatewayConfig, so the schema needs a default for it`,
      );
      assert.ok(setting !== null && typeof setting === "object", `${where} is a section, filled in`);
      assertWhole(field, setting, `${where}.`);
    }
  }
}

test("an empty config file validates to every setting GatewayConfig says is always there", () => {
  const config = validateConfig({}, policies);
  assertWhole(configSchema(policies) as FieldSchema, config, "");
  assert.deepEqual(Object.keys(config.policies).sort(), policies.map((policy) => policy.name).sort());
});

test("a setting that may be unset is absent, never null: a null in the file is refused", () => {
  for (const [raw, field] of [
    [{ basePath: null }, "/basePath"],
    [{ opsTokenFile: null }, "/opsTokenFile"],
    [{ environment: null }, "/environment"],
    [{ upstream: { url: null } }, "/upstream/url"],
    [{ upstream: { environments: { staging: null } } }, "/upstream/environments/staging"],
  ] as const) {
    assert.throws(() => validateConfig(raw, policies), { message: new RegExp(`^invalid config: ${field} `) });
  }
});

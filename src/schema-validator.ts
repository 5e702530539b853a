// How the gateway sets up ajv, for every schema it checks: the config, the OpenAPI document's
// schemas, the key file and the document's own extensions. One set-up, so that no schema is
// checked more loosely than another by an option forgotten in one place.
import { Ajv, type AnySchema, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { linearRegExpEngine } from "./linear-regexp.ts";
import { addGatewayFormats } from "./schema-formats.ts";

export interface SchemaValidatorOptions {
  /** OpenAPI 3.1 schemas are JSON Schema 2020-12; the gateway's own schemas are draft-07. */
  readonly draft?: "draft-07" | "2020-12";
  /** Fill in each `default` while validating: the config's defaults are the gateway's. */
  readonly useDefaults?: boolean;
  /** `"type": ["string", "number"]`, which strict mode refuses unless allowed. */
  readonly allowUnionTypes?: boolean;
  /** An error carries its schema, so that a describer can tell what a field accepts. */
  readonly verbose?: boolean;
}

/**
 * An ajv instance as the gateway uses one: strict, so that a schema's typo fails at start-up
 * rather than validating nothing; the first error only, so that a hostile document's cost stays
 * that of one failure; no coercion and no $data, so that a value is checked as it was sent; and
 * the standard formats (date-time, ipv4, ...; src/schema-formats.ts).
 *
 * Every `pattern` and `patternProperties` runs on the linear engine (src/linear-regexp.ts), never on
 * V8's backtracking one: a document's pattern is run on client and backend text. For the same
 * reason ajv's strict check that a schema's property names match none of its patternProperties is
 * off (allowMatchingProperties): it runs each such pattern on V8's engine, and a property that
 * also matches a pattern is valid JSON Schema (both subschemas apply).
 */
export function createSchemaValidator(options: SchemaValidatorOptions = {}): Ajv | Ajv2020 {
  const settings = {
    strict: true,
    allErrors: false,
    $data: false,
    coerceTypes: false,
    useDefaults: options.useDefaults ?? false,
    allowUnionTypes: options.allowUnionTypes ?? false,
    verbose: options.verbose ?? false,
    allowMatchingProperties: true,
    code: { regExp: linearRegExpEngine() },
  };
  const ajv = options.draft === "2020-12" ? new Ajv2020(settings) : new Ajv(settings);
  addGatewayFormats(ajv);
  return ajv;
}

/** Instances for compileSchema, one per set of options. */
const sharedValidators = new Map<string, Ajv | Ajv2020>();

/**
 * One schema's validator, from an instance shared by every caller with the same options: a new
 * instance compiles its draft's meta-schema first, which cost more than the schema itself (about
 * a third of each gateway's start-up), and ajv returns the validator it already compiled for the
 * same schema object. For the gateway's own constant schemas, not for a document's.
 */
export function compileSchema(schema: AnySchema, options: SchemaValidatorOptions = {}): ValidateFunction {
  const key = [options.draft, options.useDefaults, options.allowUnionTypes, options.verbose].join("|");
  let ajv = sharedValidators.get(key);
  if (ajv === undefined) {
    ajv = createSchemaValidator(options);
    sharedValidators.set(key, ajv);
  }
  return ajv.compile(schema);
}

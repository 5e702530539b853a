// Loading the gateway configuration: a JSON file plus environment variables, validated once
// against its schema (config-schema.ts), with defaults filled in, unknown keys refused, the
// rules between fields checked, and the result frozen.
import type { ValidateFunction } from "ajv";
import { checkedConfigSchema, configSchema, type GatewayConfig } from "./config-schema.ts";
import { escapePointerToken } from "./json/pointer.ts";
import { parseJsonText } from "./json/syntax-error.ts";
import type { AnyPolicyDefinition } from "./policy-registry.ts";
import { DEFAULT_CONFIG_FILE, fromUserDirectory } from "./project-files.ts";
import { describeSchemaError } from "./schema-error.ts";
import { createSchemaValidator } from "./schema-validator.ts";
import { ConfigError } from "./startup-errors.ts";
import { readTrustedFileSync } from "./trusted-file.ts";
import { isIpRange } from "./trusted-proxies.ts";

/** Environment variable -> JSON pointer of the config field it sets. */
export const CORE_ENVIRONMENT: Readonly<Record<string, string>> = {
  GATEWAY_MODE: "/mode",
  PORT: "/port",
  HOST: "/host",
  OPS_PORT: "/opsPort",
  OPS_HOST: "/opsHost",
  OPS_TOKEN_FILE: "/opsTokenFile",
  UPSTREAM_URL: "/upstream/url",
  ENVIRONMENT: "/environment",
  OPENAPI_FILE: "/openapi",
  LOG_LEVEL: "/log/level",
  WORKERS: "/workers",
};

/** A setting as docs/reference/configuration.md names it: its environment variable if it has one, and its field ("HOST / host"). */
export function settingName(pointer: string): string {
  const field = pointer.slice(1).replaceAll("/", ".");
  const variable = Object.keys(CORE_ENVIRONMENT).find((name) => CORE_ENVIRONMENT[name] === pointer);
  return variable === undefined ? field : `${variable} / ${field}`;
}

export interface LoadConfigOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** Overrides applied last, for tests and embedding: a partial config object. */
  readonly overrides?: Readonly<Record<string, unknown>>;
  readonly policies: readonly AnyPolicyDefinition[];
}

/** The config file the gateway reads: GATEWAY_CONFIG, else config/gateway.json. */
/** Far more than any config needs; a file over it is refused before it is parsed. */
const MAX_CONFIG_BYTES = 1024 * 1024;

export function configFileOf(env: NodeJS.ProcessEnv): string {
  return env.GATEWAY_CONFIG || DEFAULT_CONFIG_FILE;
}

export function loadConfig(options: LoadConfigOptions): GatewayConfig {
  const env = options.env ?? process.env;
  const file = configFileOf(env);
  let raw: Record<string, unknown>;
  try {
    const { text } = readTrustedFileSync(file, { maxBytes: MAX_CONFIG_BYTES, name: "the file" });
    raw = parseJsonText(text) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`config ${file}: ${(error as Error).message}`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new ConfigError(`config ${file}: must be a JSON object`);
  }
  const sources = new Map<string, string>();
  const mapping: Record<string, string> = { ...CORE_ENVIRONMENT };
  for (const policy of options.policies) {
    for (const [variable, option] of Object.entries(policy.environment ?? {})) {
      mapping[variable] = `/policies/${policy.name}/${option}`;
    }
  }
  const schema = configSchema(options.policies);
  for (const [variable, pointer] of Object.entries(mapping)) {
    const value = env[variable];
    if (value === undefined || value === "") continue;
    setPointer(raw, pointer, environmentValue(schema, pointer, value));
    sources.set(pointer, variable);
  }
  if (options.overrides) mergeInto(raw, options.overrides);
  return validateConfig(raw, options.policies, (pointer) => {
    for (const [field, variable] of sources) if (pointer.startsWith(field)) return `${variable} (${field})`;
    return `${file}: ${pointer || "/"}`;
  });
}

export function validateConfig(
  raw: Record<string, unknown>,
  policies: readonly AnyPolicyDefinition[],
  describe: (pointer: string) => string = (pointer) => pointer || "/",
): GatewayConfig {
  const validate = configValidator(policies);
  const config: unknown = structuredClone(raw);
  if (!validate(config)) {
    const wording = {
      field: describe,
      unknownProperty: (pointer: string, property: string) =>
        `${describe(`${pointer}/${escapePointerToken(property)}`)} is not a known setting`,
    };
    throw new ConfigError(`invalid config: ${describeSchemaError(validate.errors, wording)}`);
  }
  const { server, port, opsPort } = config;
  // Metrics and reports must never be served on the public port.
  if (port !== 0 && port === opsPort) {
    throw new ConfigError(
      `invalid config: ${describe("/opsPort")} must differ from ${describe("/port")} (${port})`,
    );
  }
  // Node refuses a headers timeout above the request timeout with a stack trace; say it here.
  if (server.headersTimeoutMs > server.requestTimeoutMs) {
    throw new ConfigError(
      `invalid config: ${describe("/server/headersTimeoutMs")} must not be above /server/requestTimeoutMs`,
    );
  }
  if (server.shutdownDrainMs >= server.shutdownTimeoutMs) {
    throw new ConfigError(
      `invalid config: ${describe("/server/shutdownDrainMs")} must be below /server/shutdownTimeoutMs`,
    );
  }
  return deepFreeze(config);
}

/**
 * An environment variable's text as its setting's schema types it: a number only where the
 * setting takes one (`WORKERS=2`, `PORT=8080`), so that `API_KEYS_FILE=2024` stays a file name.
 */
export function environmentValue(schema: object, pointer: string, text: string): string | number {
  const setting = schemaAt(schema, pointer);
  return takesNumber(setting) && /^-?[0-9]+(?:\.[0-9]+)?$/.test(text) ? Number(text) : text;
}

function schemaAt(schema: object, pointer: string): unknown {
  let node: unknown = schema;
  for (const key of pointer.slice(1).split("/")) {
    const properties = (node as { properties?: Record<string, unknown> } | undefined)?.properties;
    node = properties?.[key];
  }
  return node;
}

function takesNumber(schema: unknown): boolean {
  if (schema === null || typeof schema !== "object") return false;
  const { type, anyOf, oneOf } = schema as { type?: unknown; anyOf?: unknown[]; oneOf?: unknown[] };
  const types = Array.isArray(type) ? type : [type];
  if (types.includes("integer") || types.includes("number")) return true;
  return [...(anyOf ?? []), ...(oneOf ?? [])].some(takesNumber);
}

/**
 * The config's validator, compiled once per list of policies (the schema follows from the list):
 * a process validates its config once, but a test file validates one per gateway or policy it
 * creates, and the compile was most of the cost (about 30 ms each).
 */
const configValidators = new WeakMap<readonly AnyPolicyDefinition[], ValidateFunction<GatewayConfig>>();

/**
 * The config's type guard. Its schema is configSchema, which the compiler holds to GatewayConfig
 * (JSONSchemaType), with what JSONSchemaType cannot write (checkedConfigSchema): a section left
 * out is filled with its defaults, a setting left unset is absent and never null.
 */
function configValidator(policies: readonly AnyPolicyDefinition[]): ValidateFunction<GatewayConfig> {
  let validate = configValidators.get(policies);
  if (validate === undefined) {
    // verbose: an error carries its schema, so that "one of these" fields can say what they accept.
    const ajv = createSchemaValidator({ useDefaults: true, allowUnionTypes: true, verbose: true });
    ajv.addFormat("ip-range", isIpRange);
    validate = ajv.compile<GatewayConfig>(checkedConfigSchema(policies));
    configValidators.set(policies, validate);
  }
  return validate;
}

function setPointer(target: Record<string, unknown>, pointer: string, value: unknown) {
  const keys = pointer.slice(1).split("/");
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (next === null || typeof next !== "object" || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1] as string] = value;
}

function mergeInto(target: Record<string, unknown>, source: Readonly<Record<string, unknown>>) {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (
      value !== null &&
      typeof value === "object" &&
      !Array.isArray(value) &&
      existing !== null &&
      typeof existing === "object" &&
      !Array.isArray(existing)
    ) {
      mergeInto(existing as Record<string, unknown>, value as Record<string, unknown>);
    } else target[key] = value;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/**
 * The config as start-up reads it, for a command that reports on it without starting (plan, the
 * deprecation report): `file` instead of GATEWAY_CONFIG and `openapi` instead of the config's
 * document, each a path from the user's directory.
 */
export function loadConfigForCommand(
  policies: readonly AnyPolicyDefinition[],
  given: { readonly file?: string | undefined; readonly openapi?: string | undefined },
): { readonly config: GatewayConfig; readonly file: string } {
  const file = given.file === undefined ? configFileOf(process.env) : fromUserDirectory(given.file);
  const config = loadConfig({
    policies,
    env: { ...process.env, GATEWAY_CONFIG: file },
    ...(given.openapi === undefined ? {} : { overrides: { openapi: fromUserDirectory(given.openapi) } }),
  });
  return { config, file };
}

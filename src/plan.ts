// What the gateway will enforce with a document and a config, said before anything starts: the
// core's part (routes, parameters, bodies, what it does not check) and each policy's own
// (PolicyDefinition.plan), built by the same functions start-up uses. createGateway() logs its
// warnings; `npm run plan` (scripts/plan.ts) prints the whole of it.
import { loadConfigForCommand } from "./config.ts";
import type { GatewayConfig } from "./config-schema.ts";
import {
  because,
  PROXY_CAPABILITIES,
  PROXY_NAMES,
  type ProxyCapabilities,
  type ProxyName,
} from "./decision/capabilities.ts";
import { PAGE_SIZE_EXTENSION } from "./openapi/page-size.ts";
import { type ApiDescription, loadApiDescription, type Operation, type ParameterSpec } from "./openapi.ts";
import type { PlanContext, PlanWarning } from "./policy.ts";
import type { AnyPolicyDefinition } from "./policy-registry.ts";
import { routeOverlaps } from "./route-overlaps.ts";
import { describeSchema } from "./schema-brief.ts";
import { ConfigError, StartupError } from "./startup-errors.ts";
import { chooseUpstream, shownUpstream } from "./upstream-choice.ts";

export interface PlannedParameter {
  readonly name: string;
  readonly in: string;
  readonly required: boolean;
  readonly type?: string;
  readonly format?: string;
  readonly default?: unknown;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly enum?: readonly unknown[];
  /** False for header and cookie parameters, with the reason. */
  readonly checked: boolean;
  readonly reason?: string;
}

export interface PlannedOperation {
  readonly operation: string;
  readonly method: string;
  /** The public path, base path included. */
  readonly path: string;
  /** Where a call is sent: the upstream's URL and the path after the base path, or the demo backend's path. */
  readonly forwardedTo: string;
  /** Some policy lets anyone call it without a credential. */
  readonly public: boolean;
  readonly parameters: readonly PlannedParameter[];
  /**
   * The page size (src/openapi/page-size.ts): the parameter and whether the document marks it or
   * the name rule found it, or, on a list without one, why it was not inferred; null where the
   * question does not arise.
   */
  readonly pageSize:
    | { readonly parameter: string; readonly source: "x-gateway-page-size" | "name" }
    | { readonly parameter: null; readonly reason: string }
    | null;
  readonly requestBody: {
    readonly required: boolean;
    readonly content: readonly {
      readonly mediaType: string;
      readonly checked: boolean;
      readonly schema: string;
    }[];
  } | null;
  /** Each policy's facts as data, by policy name (only the policies that act on the operation). */
  readonly policies: Readonly<Record<string, unknown>>;
  /**
   * What a proxy in front of the gateway in decision mode gives up on this operation
   * (docs/plugin-mode.md), from the same capability facts the doors and the capability table use.
   */
  readonly decisionMode: readonly ProxyShortfall[];
  /** The same as lines for people, in the order the policies judge a request. */
  readonly text: readonly { readonly policy: string; readonly lines: readonly string[] }[];
}

/** One thing a proxy does not carry on an operation in decision mode, and why. */
export type ProxyShortfall = { readonly proxy: ProxyName; readonly because: string } & (
  | { readonly givesUp: "request-body-validation" }
  /** A policy sets these query parameters for the backend; through this proxy they arrive as sent. */
  | {
      readonly givesUp: "query-set-by-policy";
      readonly policy: string;
      readonly parameters: readonly string[];
    }
);

export interface GatewayPlan {
  readonly title: string;
  readonly version: string;
  readonly basePath: string;
  readonly environment: string;
  /** The backend (origin and path), or "the bundled demo backend". */
  readonly upstream: string;
  /** Public operations first, then the others, each in the document's order. */
  readonly operations: readonly PlannedOperation[];
  /** What start-up warns about: one warn line each. `policy` is undefined for the core's own. */
  readonly warnings: readonly (PlanWarning & { readonly policy: string | undefined })[];
}

export interface PlanOptions {
  readonly api: ApiDescription;
  readonly config: GatewayConfig;
  readonly policies: readonly AnyPolicyDefinition[];
  readonly environment: string;
  /** The backend's URL as the gateway will use it; undefined for the bundled demo backend. */
  readonly upstreamUrl?: string | undefined;
  readonly now: () => number;
}

/**
 * The plan of a document and a config as start-up would read them (loadConfigForCommand: `file`
 * instead of GATEWAY_CONFIG, `openapi` instead of the config's document), for `npm run plan`.
 */
export function planForCommand(
  policies: readonly AnyPolicyDefinition[],
  given: { readonly file?: string | undefined; readonly openapi?: string | undefined },
  now: () => number,
): { readonly plan: GatewayPlan; readonly config: GatewayConfig; readonly configFile: string } {
  const { config, file: configFile } = loadConfigForCommand(policies, given);
  const choice = chooseUpstream(config);
  const api = loadApiDescription(config.openapi, { basePath: config.basePath });
  const environment = choice.kind === "demo" ? "demo" : choice.environment;
  const upstreamUrl = choice.kind === "demo" ? undefined : choice.url;
  return { plan: planGateway({ api, config, policies, environment, upstreamUrl, now }), config, configFile };
}

const DEMO_UPSTREAM = "the bundled demo backend";

export const UNCHECKED_PARAMETER_REASON =
  "the gateway checks path and query parameters only; headers and cookies reach the backend as the client sent them";

/**
 * The plan, or the ConfigError / ApiDescriptionError that start-up would stop with (a policy's
 * plain Error is a configuration problem, as in createGateway).
 */
export function planGateway(options: PlanOptions): GatewayPlan {
  const { api, config } = options;
  const upstream = options.upstreamUrl === undefined ? DEMO_UPSTREAM : shownUpstream(options.upstreamUrl);
  // The demo backend serves the document's own base path.
  const forwardBase = options.upstreamUrl === undefined ? api.basePath : upstream;
  const context: PlanContext = {
    api,
    environment: options.environment,
    now: options.now,
  };
  const plans = options.policies.map((definition) => {
    try {
      return { name: definition.name, plan: definition.plan?.(config.policies[definition.name], context) };
    } catch (error) {
      throw error instanceof StartupError || !(error instanceof Error)
        ? error
        : new ConfigError(error.message);
    }
  });
  const warnings: GatewayPlan["warnings"][number][] = [...coreWarnings(api)];
  for (const { name, plan } of plans) {
    for (const warning of plan?.warnings ?? []) warnings.push({ ...warning, policy: name });
  }
  const operations = api.operations.map((operation): PlannedOperation => {
    const data: Record<string, unknown> = {};
    const text: { policy: string; lines: readonly string[] }[] = [];
    let open = false;
    const setsQuery: { policy: string; parameters: readonly string[] }[] = [];
    for (const { name, plan } of plans) {
      const facts = plan?.operation?.(operation);
      if (facts === undefined) continue;
      if (facts.public) open = true;
      if (facts.setsQuery !== undefined && facts.setsQuery.length > 0) {
        setsQuery.push({ policy: name, parameters: facts.setsQuery });
      }
      data[name] = facts.data;
      if (facts.text.length > 0) text.push({ policy: name, lines: facts.text });
    }
    return {
      operation: operation.id,
      method: operation.method,
      path: `${api.basePath}${operation.path}`,
      forwardedTo: `${forwardBase}${operation.path}`,
      public: open,
      parameters: parametersOf(operation),
      pageSize: pageSizeOf(operation),
      requestBody: requestBodyOf(operation, api),
      policies: data,
      decisionMode: shortfallsOf(operation, setsQuery),
      text,
    };
  });
  return {
    title: api.title,
    version: api.version,
    basePath: api.basePath,
    environment: options.environment,
    upstream,
    operations: [...operations.filter((o) => o.public), ...operations.filter((o) => !o.public)],
    warnings,
  };
}

function coreWarnings(api: ApiDescription): GatewayPlan["warnings"] {
  const warnings: GatewayPlan["warnings"][number][] = [];
  const unchecked = api.operations.filter((operation) => operation.uncheckedParameters.length > 0);
  if (unchecked.length > 0) {
    const named = unchecked.flatMap((operation) =>
      operation.uncheckedParameters.map((p) => `${operation.id} ${p.name} (${p.in})`),
    );
    warnings.push({
      warning: "parameters-not-checked",
      message: `header and cookie parameters are not checked (${UNCHECKED_PARAMETER_REASON}): ${named.join(", ")}`,
      operations: unchecked.map((operation) => operation.id),
      policy: undefined,
    });
  }
  const passed = api.operations.filter((operation) =>
    operation.requestBody?.content.some((entry) => entry.validate === undefined && !entry.json),
  );
  if (passed.length > 0) {
    const named = passed.flatMap((operation) =>
      (operation.requestBody?.content ?? [])
        .filter((entry) => entry.validate === undefined && !entry.json)
        .map((entry) => `${operation.id} ${entry.mediaType}`),
    );
    warnings.push({
      warning: "request-body-not-checked",
      message: `request bodies of a media type that is not JSON are passed on unchecked: ${named.join(", ")}`,
      operations: passed.map((operation) => operation.id),
      policy: undefined,
    });
  }
  // A list with a parameter named like a page size that the rule could not take: said at start-up,
  // since nothing clamps that list's page nor holds its answers to one. A list with no such name
  // is only marked in the plan.
  const missed = api.operations.flatMap(({ id, pageSize }) =>
    pageSize !== undefined && pageSize.parameter === undefined && pageSize.candidates.length > 0
      ? [{ id, reason: pageSize.reason }]
      : [],
  );
  if (missed.length > 0) {
    warnings.push({
      warning: "page-size-not-inferred",
      message: `page size not inferred, so not clamped nor held to: ${missed.map(({ id, reason }) => `${id} (${reason})`).join(", ")}`,
      operations: missed.map(({ id }) => id),
      policy: undefined,
    });
  }
  // The loader refused the pairs whose security differs: these need the same key either way.
  const overlaps = routeOverlaps(api.operations);
  if (overlaps.length > 0) {
    const named = overlaps.map(
      ({ first, second, example }) => `${first.path} and ${second.path} (${example})`,
    );
    const concerned = new Set(
      overlaps.flatMap(({ first, second }) => [...first.byMethod.values(), ...second.byMethod.values()]),
    );
    warnings.push({
      warning: "paths-overlap",
      message: `templated paths that can match one request are routed literal segment first, which a backend that takes the first declared route does not do (their security is the same): ${named.join(", ")}`,
      operations: api.operations
        .filter((operation) => concerned.has(operation))
        .map((operation) => operation.id),
      policy: undefined,
    });
  }
  return warnings;
}

function pageSizeOf({ pageSize }: Operation): PlannedOperation["pageSize"] {
  if (pageSize === undefined) return null;
  if (pageSize.parameter === undefined) return { parameter: null, reason: pageSize.reason };
  return {
    parameter: pageSize.parameter,
    source: pageSize.source === "marked" ? PAGE_SIZE_EXTENSION : "name",
  };
}

function parametersOf(operation: Operation): PlannedParameter[] {
  const checked = [...operation.pathParameters, ...operation.queryParameters.values()].map(describeParameter);
  const unchecked = operation.uncheckedParameters.map(
    (p): PlannedParameter => ({
      name: p.name,
      in: p.in,
      required: false,
      checked: false,
      reason: UNCHECKED_PARAMETER_REASON,
    }),
  );
  return [...checked, ...unchecked];
}

function describeParameter(spec: ParameterSpec): PlannedParameter {
  const { schema, minimum, maximum } = spec;
  return {
    name: spec.name,
    in: spec.in,
    required: spec.required,
    ...(spec.type === undefined ? {} : { type: spec.type }),
    ...(spec.format === undefined ? {} : { format: spec.format }),
    ...(schema.default === undefined ? {} : { default: schema.default }),
    ...(minimum === undefined ? {} : { minimum }),
    ...(maximum === undefined ? {} : { maximum }),
    ...(Array.isArray(schema.enum) ? { enum: schema.enum } : {}),
    checked: true,
  };
}

function requestBodyOf(operation: Operation, api: ApiDescription): PlannedOperation["requestBody"] {
  const body = operation.requestBody;
  if (body === undefined) return null;
  return {
    required: body.required,
    content: body.content.map((entry) => ({
      mediaType: entry.mediaType,
      checked: entry.validate !== undefined,
      schema: entry.schema === undefined ? "no schema" : describeSchema(entry.schema, api.schemas, true),
    })),
  };
}

/** Per proxy, what decision mode loses on the operation: a body it never judges, a query it cannot set. */
function shortfallsOf(
  operation: Operation,
  setsQuery: readonly { readonly policy: string; readonly parameters: readonly string[] }[],
): ProxyShortfall[] {
  // A body the gateway reads: one it validates against a schema, or parses as JSON.
  const judgesBody = operation.requestBody?.content.some(
    (entry) => entry.validate !== undefined || entry.json,
  );
  const shortfalls: ProxyShortfall[] = [];
  for (const proxy of PROXY_NAMES) {
    const capabilities: ProxyCapabilities = PROXY_CAPABILITIES[proxy];
    if (judgesBody && !capabilities.sendsBody) {
      shortfalls.push({ proxy, givesUp: "request-body-validation", because: because.noBody(capabilities) });
    }
    if (!capabilities.takesTarget) {
      for (const { policy, parameters } of setsQuery) {
        shortfalls.push({
          proxy,
          givesUp: "query-set-by-policy",
          policy,
          parameters,
          because: because.noTarget(capabilities),
        });
      }
    }
  }
  return shortfalls;
}

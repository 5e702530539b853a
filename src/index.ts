// The gateway as a library. The CLI behind `npm start` (src/main.ts) is a thin wrapper around it.
import policies from "../policies/index.ts";
import { type CatalogueEntry, catalogueOf, type GatewayError } from "./errors.ts";

export { loadConfig, validateConfig } from "./config.ts";
export type { GatewayConfig } from "./config-schema.ts";
export type { ErrorCode, GatewayError } from "./errors.ts";
export {
  type BuiltGateway,
  buildGateway,
  createGateway,
  type Gateway,
  type GatewayOptions,
} from "./gateway.ts";
export { createLogger } from "./logger.ts";
export { createMetrics, type Metrics } from "./metrics.ts";
export { type ApiDescription, loadApiDescription, type Operation } from "./openapi.ts";
export { type GatewayPlan, planGateway } from "./plan.ts";
// The contract a policy is written against, whole: a host application writes its own as the
// bundled ones are written.
export * from "./policy.ts";
export type { AnyPolicyDefinition } from "./policy-registry.ts";
export { DEFAULT_CONFIG_FILE, DEFAULT_OPENAPI_FILE } from "./project-files.ts";
export {
  ApiDescriptionError,
  ConfigError,
  ListenError,
  STARTUP_ERROR_CODES,
  StartupError,
  type StartupErrorCode,
} from "./startup-errors.ts";
export { chooseUpstream } from "./upstream-choice.ts";
export { policies };

/** Every error code the gateway answers with: the core's and those of the bundled policies. */
export const errorCatalogue: Readonly<Record<string, CatalogueEntry>> = catalogueOf(policies);

/** An error of the catalogue, for a host application that answers in the gateway's own words. */
export function catalogueError(
  code: string,
  message?: string,
  headers?: Readonly<Record<string, string>>,
): GatewayError {
  const entry = errorCatalogue[code];
  if (entry === undefined) throw new Error(`${code} is not an error code of the catalogue`);
  return { code, status: entry.status, reason: entry.reason, message: message ?? entry.message, headers };
}

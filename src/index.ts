// The gateway as a library. The CLI behind `npm start` (src/main.ts) is a thin wrapper around it.
export { default as policies } from "../policies/index.ts";
export {
  ConfigError,
  DEFAULT_CONFIG_FILE,
  DEFAULT_OPENAPI_FILE,
  type GatewayConfig,
  loadConfig,
  validateConfig,
} from "./config.ts";
export { type ErrorCode, errorCatalogue, type GatewayError, gatewayError } from "./errors.ts";
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
export type { Exchange, OperationPolicy, PolicyContext, PolicyDefinition, PolicyInstance } from "./policy.ts";
export { definePolicy } from "./policy.ts";
export { chooseUpstream } from "./upstream-choice.ts";

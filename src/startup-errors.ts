// Why the gateway did not start. Each failure has a stable code, as undici's errors do: the CLI
// prints any of them as one line, and a program that embeds the gateway tells them apart by
// code, which a reworded message or a moved class does not change. docs/reference/errors.md
// lists them (npm run docs).

/** Code -> what failed; a code is never renamed or reused. */
export const STARTUP_ERROR_CODES = {
  GATEWAY_CONFIG_INVALID:
    "The config file, an environment variable, a policy's options or the API key file is refused",
  GATEWAY_API_DESCRIPTION_INVALID: "The OpenAPI description cannot be read or is refused",
  GATEWAY_LISTEN_FAILED: "The public or the ops address cannot be listened on",
} as const;

export type StartupErrorCode = keyof typeof STARTUP_ERROR_CODES;

/** A start-up failure whose message alone tells the operator what to fix: no stack is needed. */
export abstract class StartupError extends Error {
  abstract readonly code: StartupErrorCode;
}

export class ConfigError extends StartupError {
  override name = "ConfigError";
  readonly code = "GATEWAY_CONFIG_INVALID";
}

export class ApiDescriptionError extends StartupError {
  override name = "ApiDescriptionError";
  readonly code = "GATEWAY_API_DESCRIPTION_INVALID";
}

export class ListenError extends StartupError {
  override name = "ListenError";
  readonly code = "GATEWAY_LISTEN_FAILED";
}

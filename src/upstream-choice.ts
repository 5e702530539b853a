// Which backend the gateway fronts: UPSTREAM_URL, else the configured upstream of the chosen
// environment, else (only when no environment was chosen) the bundled demo backend.
import type { GatewayConfig } from "./config-schema.ts";
import { ConfigError } from "./startup-errors.ts";
import { withoutTrailingSlashes } from "./trailing-slashes.ts";

export type UpstreamChoice =
  | { readonly kind: "configured"; readonly url: string; readonly environment: "production" | "staging" }
  | { readonly kind: "demo" };

export function chooseUpstream(config: GatewayConfig): UpstreamChoice {
  const environment = config.environment;
  if (config.upstream.url)
    return { kind: "configured", url: config.upstream.url, environment: environment ?? "production" };
  if (environment) {
    const url = config.upstream.environments[environment];
    if (url) return { kind: "configured", url, environment };
    throw new ConfigError(
      `ENVIRONMENT is ${environment} but no upstream is known for it: set UPSTREAM_URL or upstream.environments.${environment}`,
    );
  }
  return { kind: "demo" };
}

/**
 * The upstream as logs and the plan show it: origin and path, no trailing slash, never the user
 * or password a URL may carry.
 */
export function shownUpstream(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${withoutTrailingSlashes(parsed.pathname)}`;
}

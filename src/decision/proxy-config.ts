// `npm run proxy-config -- <proxy> …`: the config of a proxy in front of the gateway in decision
// mode, made from the same document, config and policies the gateway starts with (the policies
// say which headers they own), so that the pair agrees by construction.
import type { GatewayConfig } from "../config-schema.ts";
import { createGateway } from "../gateway.ts";
import { createLogger } from "../logger.ts";
import type { AnyPolicyDefinition } from "../policy-registry.ts";
import { caddyConfig } from "./caddy-config.ts";
import { envoyConfig } from "./envoy-config.ts";
import { haproxyConfig } from "./haproxy-config.ts";
import { nginxConfig } from "./nginx-config.ts";
import { type ProxyAddresses, type ProxyContract, proxyContract } from "./proxy-contract.ts";
import { traefikConfig } from "./traefik-config.ts";

/** Each proxy with a door and a generator. */
export const GENERATORS: Readonly<
  Record<string, (contract: ProxyContract, addresses: ProxyAddresses) => string>
> = {
  nginx: nginxConfig,
  envoy: envoyConfig,
  caddy: caddyConfig,
  traefik: traefikConfig,
  haproxy: haproxyConfig,
};

/** The contract a gateway with this config and these policies holds a proxy to. */
export async function contractOf(
  config: GatewayConfig,
  policies: readonly AnyPolicyDefinition[],
): Promise<ProxyContract> {
  const gateway = createGateway({
    config,
    policies,
    upstreamUrl: "",
    environment: config.environment ?? "production",
    logger: createLogger("silent").logger,
    startupWarnings: false,
  });
  try {
    return proxyContract(gateway.api, config, gateway.ownHeaders);
  } finally {
    await gateway.close();
  }
}

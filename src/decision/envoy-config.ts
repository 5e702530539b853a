// An Envoy bootstrap for decision mode, generated from the document: the HTTP ext_authz filter
// asks the gateway's Envoy door about every request (the original method, the path after
// path_prefix, the headers the request side reads, and the body up to the gateway's cap), fails
// closed, and passes a refusal on as the gateway wrote it. Envoy is not packaged for the test
// machines: test/support/envoy-harness.ts acts on this very config as Envoy's HTTP ext_authz
// client does, and its cells are marked "simulated" (docs/plugin-mode/capabilities.md).
import { stringify } from "yaml";
import { ENVOY_HEADERS_TO_REMOVE, ENVOY_PATH_PREFIX, UPSTREAM_URI_HEADER } from "./doors.ts";
import { type ProxyAddresses, type ProxyContract, splitUrl } from "./proxy-contract.ts";

/** The status Envoy answers when the decision service is down, slow or answers garbage. */
export const ENVOY_STATUS_ON_ERROR = 503;

export function envoyConfig(contract: ProxyContract, addresses: ProxyAddresses): string {
  const decision = splitUrl(addresses.decisionUrl);
  const backend = splitUrl(addresses.upstreamUrl);
  const seconds = (ms: number) => `${ms / 1000}s`;
  const timeout = seconds(addresses.timeoutMs);
  const exact = (names: readonly string[]) => ({ patterns: names.map((name) => ({ exact: name })) });
  // Owned headers go before the decision: what the backend gets of them is only ever the decision's.
  const owned = [...contract.upstreamHeaders.filter((name) => name !== "authorization"), UPSTREAM_URI_HEADER];
  const stripOwned = [
    "function envoy_on_request(handle)",
    ...owned.map((name) => `  handle:headers():remove("${name}")`),
    "end",
  ].join("\n");
  // The decision's target (limit defaulted or clamped, the public base path replaced) becomes the path.
  const applyTarget = [
    "function envoy_on_request(handle)",
    `  local target = handle:headers():get("${UPSTREAM_URI_HEADER}")`,
    `  handle:headers():remove("${UPSTREAM_URI_HEADER}")`,
    `  if target ~= nil then handle:headers():replace(":path", "${backend.path}" .. target) end`,
    "end",
  ].join("\n");
  const lua = (name: string, code: string) => ({
    name,
    typed_config: {
      "@type": "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua",
      default_source_code: { inline_string: code },
    },
  });
  const cluster = (name: string, host: string, port: number, connectTimeout: string) => ({
    name,
    type: "STRICT_DNS",
    connect_timeout: connectTimeout,
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: [{ endpoint: { address: { socket_address: { address: host, port_value: port } } } }],
        },
      ],
    },
  });
  const bootstrap = {
    static_resources: {
      listeners: [
        {
          name: "gateway",
          address: { socket_address: { address: "0.0.0.0", port_value: addresses.listenPort } },
          filter_chains: [
            {
              filters: [
                {
                  name: "envoy.filters.network.http_connection_manager",
                  typed_config: {
                    "@type":
                      "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                    stat_prefix: "gateway",
                    // The client's address is the peer's, appended to X-Forwarded-For: the door reads that hop.
                    use_remote_address: true,
                    route_config: {
                      virtual_hosts: [
                        {
                          name: "api",
                          domains: ["*"],
                          routes: [
                            {
                              match: { prefix: "/" },
                              // Proxy mode's deadline for the backend's answer (Envoy's default is 15 s):
                              // past it Envoy answers 504 with its own text.
                              route: {
                                cluster: "gateway_backend",
                                timeout: seconds(contract.upstreamTimeoutMs),
                              },
                            },
                          ],
                        },
                      ],
                    },
                    http_filters: [
                      lua("gateway.strip_owned_headers", stripOwned),
                      {
                        name: "envoy.filters.http.ext_authz",
                        typed_config: {
                          "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz",
                          transport_api_version: "V3",
                          failure_mode_allow: false,
                          status_on_error: { code: ENVOY_STATUS_ON_ERROR },
                          // One byte over the cap reaches the gateway, which refuses it as proxy mode does (413).
                          with_request_body: {
                            max_request_bytes: contract.maxRequestBodyBytes + 1,
                            allow_partial_message: true,
                          },
                          allowed_headers: exact(["x-forwarded-for", ...contract.judgedHeaders]),
                          http_service: {
                            server_uri: {
                              uri: `http://${decision.host}:${decision.port}`,
                              cluster: "gateway_decision",
                              timeout,
                            },
                            path_prefix: ENVOY_PATH_PREFIX,
                            authorization_response: {
                              allowed_upstream_headers: exact([
                                ...contract.upstreamHeaders,
                                "x-request-id",
                                UPSTREAM_URI_HEADER,
                                ENVOY_HEADERS_TO_REMOVE,
                              ]),
                              allowed_client_headers_on_success: exact([
                                ...contract.clientHeaders,
                                "x-request-id",
                                "x-content-type-options",
                              ]),
                            },
                          },
                        },
                      },
                      lua("gateway.apply_target", applyTarget),
                      {
                        name: "envoy.filters.http.router",
                        typed_config: {
                          "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router",
                        },
                      },
                    ],
                  },
                },
              ],
            },
          ],
        },
      ],
      clusters: [
        cluster("gateway_decision", decision.host, decision.port, timeout),
        cluster("gateway_backend", backend.host, backend.port, seconds(contract.upstreamConnectTimeoutMs)),
      ],
    },
  };
  const header = [
    `# Generated by \`npm run proxy-config -- envoy\` from ${contract.title || "the OpenAPI document"}.`,
    "# Regenerate it when the document or the gateway's config changes. Every request is judged by",
    `# the gateway in decision mode (GATEWAY_MODE=decision) at ${ENVOY_PATH_PREFIX} before it is forwarded.`,
    "# Checked by a harness acting as Envoy's HTTP ext_authz client, not yet against a running Envoy.",
  ];
  return `${header.join("\n")}\n${stringify(bootstrap, { lineWidth: 0 })}`;
}

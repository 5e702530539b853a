// Envoy is not packaged for the test machines: this harness reads the Envoy config the gateway
// generates and acts on it as Envoy does with its HTTP ext_authz filter (v3), so that the config
// and the door are held to one behaviour. What it does, from Envoy's docs:
// - the connection manager (use_remote_address) appends the peer to X-Forwarded-For;
// - the first Lua filter removes the headers the gateway owns (its remove() lines are read);
// - ext_authz sends the original method, path_prefix + the original path and query, the headers
//   allowed_headers names plus Host, Authorization and Content-Length (0, or the length of the
//   body sent: with_request_body, up to max_request_bytes, partial when allow_partial_message);
// - 200 is an allow: allowed_upstream_headers replace the request's, the names listed in
//   x-envoy-auth-headers-to-remove go, allowed_client_headers_on_success go on the answer;
// - any other status is a denial, passed on with its headers and body;
// - a connection error or the timeout answers status_on_error (failure_mode_allow is false);
// - the second Lua filter makes the decision's target the path (its prefix is read);
// - the router forwards to gateway_backend: no connection within the cluster's connect_timeout, or
//   none at all, answers 503 with Envoy's text; no whole answer within the route's timeout 504.
// Every cell it produces is marked "simulated" in the capability table.

import { once } from "node:events";
import http, { type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { parse } from "yaml";

interface Matcher {
  readonly patterns: readonly { readonly exact: string }[];
}

interface ExtAuthz {
  readonly status_on_error: { readonly code: number };
  readonly failure_mode_allow: boolean;
  readonly with_request_body?: {
    readonly max_request_bytes: number;
    readonly allow_partial_message: boolean;
  };
  readonly allowed_headers: Matcher;
  readonly http_service: {
    readonly server_uri: { readonly uri: string; readonly timeout: string };
    readonly path_prefix: string;
    readonly authorization_response: {
      readonly allowed_upstream_headers: Matcher;
      readonly allowed_client_headers_on_success: Matcher;
    };
  };
}

interface Filter {
  readonly name: string;
  readonly typed_config: Record<string, unknown>;
}

/** What the harness read from the generated config. */
export interface EnvoyPlan {
  readonly listenPort: number;
  readonly extAuthz: ExtAuthz;
  readonly stripped: readonly string[];
  readonly targetHeader: string;
  readonly targetPrefix: string;
  readonly backend: {
    readonly host: string;
    readonly port: number;
    readonly connectTimeoutMs: number;
    /** The route's timeout: for the backend's whole answer. */
    readonly timeoutMs: number;
  };
}

export function readEnvoyConfig(yaml: string): EnvoyPlan {
  const config = parse(yaml) as {
    static_resources: {
      listeners: {
        address: { socket_address: { port_value: number } };
        filter_chains: {
          filters: {
            typed_config: {
              http_filters: Filter[];
              route_config: {
                virtual_hosts: { routes: { route: { cluster: string; timeout?: string } }[] }[];
              };
            };
          }[];
        }[];
      }[];
      clusters: {
        name: string;
        connect_timeout?: string;
        load_assignment: {
          endpoints: {
            lb_endpoints: {
              endpoint: { address: { socket_address: { address: string; port_value: number } } };
            }[];
          }[];
        };
      }[];
    };
  };
  const listener = config.static_resources.listeners[0];
  if (!listener) throw new Error("no listener");
  const manager = listener.filter_chains[0]?.filters[0]?.typed_config;
  const filters = manager?.http_filters ?? [];
  const route = manager?.route_config.virtual_hosts[0]?.routes[0]?.route;
  const names = filters.map((filter) => filter.name);
  const authzAt = names.indexOf("envoy.filters.http.ext_authz");
  const lua = (filter: Filter | undefined) =>
    String(
      (filter?.typed_config.default_source_code as { inline_string?: string } | undefined)?.inline_string ??
        "",
    );
  const before = lua(filters[authzAt - 1]);
  const after = lua(filters[authzAt + 1]);
  const stripped = [...before.matchAll(/remove\("([^"]+)"\)/g)].map((match) => match[1] as string);
  const target = /get\("([^"]+)"\)[\s\S]*replace\(":path", "([^"]*)" \.\. target\)/.exec(after);
  if (authzAt < 1 || !target || names.at(-1) !== "envoy.filters.http.router") {
    throw new Error(`the filter chain is not Lua, ext_authz, Lua, router: ${names.join(", ")}`);
  }
  const backend = config.static_resources.clusters.find((cluster) => cluster.name === "gateway_backend");
  const address = backend?.load_assignment.endpoints[0]?.lb_endpoints[0]?.endpoint.address.socket_address;
  if (!backend || !address) throw new Error("no gateway_backend cluster");
  if (route?.cluster !== "gateway_backend") throw new Error("the route is not to gateway_backend");
  return {
    listenPort: listener.address.socket_address.port_value,
    extAuthz: (filters[authzAt] as Filter).typed_config as unknown as ExtAuthz,
    stripped,
    targetHeader: target[1] as string,
    targetPrefix: target[2] as string,
    backend: {
      host: address.address,
      port: address.port_value,
      connectTimeoutMs: milliseconds(backend.connect_timeout ?? ENVOY_DEFAULT_CONNECT_TIMEOUT),
      timeoutMs: milliseconds(route.timeout ?? ENVOY_DEFAULT_ROUTE_TIMEOUT),
    },
  };
}

export interface EnvoyHarness {
  readonly origin: string;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "content-length",
]);

/** Listens on an ephemeral port (the config's own port is for a real Envoy). */
export async function startEnvoyHarness(yaml: string): Promise<EnvoyHarness> {
  const plan = readEnvoyConfig(yaml);
  const authz = plan.extAuthz;
  const allowed = new Set(authz.allowed_headers.patterns.map((p) => p.exact));
  for (const always of ["host", "authorization", "content-length"]) allowed.add(always);
  const toUpstream = new Set(
    authz.http_service.authorization_response.allowed_upstream_headers.patterns.map((p) => p.exact),
  );
  const toClient = new Set(
    authz.http_service.authorization_response.allowed_client_headers_on_success.patterns.map((p) => p.exact),
  );
  const timeoutMs = milliseconds(authz.http_service.server_uri.timeout);
  const server = http.createServer(async (req, res) => {
    const body = await readAll(req);
    const headers: IncomingHttpHeaders = { ...req.headers };
    const peer = req.socket.remoteAddress ?? "";
    headers["x-forwarded-for"] = headers["x-forwarded-for"] ? `${headers["x-forwarded-for"]}, ${peer}` : peer;
    for (const name of plan.stripped) delete headers[name];
    const limits = authz.with_request_body;
    let sent: Buffer = Buffer.alloc(0);
    if (limits && body.length > 0) {
      if (body.length > limits.max_request_bytes && !limits.allow_partial_message) {
        return answer(res, 413, {}, "Payload Too Large");
      }
      sent = body.subarray(0, limits.max_request_bytes);
    }
    const checkHeaders: Record<string, string> = {};
    for (const name of Object.keys(headers)) {
      const value = headers[name];
      if (allowed.has(name) && typeof value === "string") checkHeaders[name] = value;
    }
    checkHeaders["content-length"] = String(sent.length);
    let check: { status: number; headers: IncomingHttpHeaders; body: Buffer };
    try {
      check = await call(
        `${authz.http_service.server_uri.uri}${authz.http_service.path_prefix}${req.url}`,
        req.method ?? "GET",
        checkHeaders,
        sent,
        timeoutMs,
      );
    } catch {
      return answer(res, authz.status_on_error.code, {}, "");
    }
    if (check.status !== 200) {
      const denied: Record<string, string> = {};
      for (const [name, value] of Object.entries(check.headers)) {
        if (name !== "host" && !HOP_BY_HOP.has(name) && typeof value === "string") denied[name] = value;
      }
      return answer(res, check.status, denied, req.method === "HEAD" ? "" : check.body);
    }
    const clientHeaders: Record<string, string> = {};
    for (const [name, value] of Object.entries(check.headers)) {
      if (typeof value !== "string") continue;
      if (toUpstream.has(name)) headers[name] = value;
      if (toClient.has(name)) clientHeaders[name] = value;
    }
    const removed = check.headers["x-envoy-auth-headers-to-remove"];
    if (typeof removed === "string") for (const name of removed.split(",")) delete headers[name.trim()];
    delete headers["x-envoy-auth-headers-to-remove"];
    let path = req.url ?? "/";
    const target = headers[plan.targetHeader];
    delete headers[plan.targetHeader];
    if (typeof target === "string") path = `${plan.targetPrefix}${target}`;
    for (const name of HOP_BY_HOP) delete headers[name];
    if (body.length > 0) headers["content-length"] = String(body.length);
    let upstream: { status: number; headers: IncomingHttpHeaders; body: Buffer };
    try {
      upstream = await call(
        `http://${plan.backend.host}:${plan.backend.port}${path}`,
        req.method ?? "GET",
        headers as Record<string, string>,
        body,
        plan.backend.timeoutMs,
        plan.backend.connectTimeoutMs,
      );
    } catch (error) {
      if (error === TIMED_OUT) return answer(res, 504, {}, "upstream request timeout");
      return answer(res, 503, {}, "upstream connect error");
    }
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(upstream.headers)) {
      if (!HOP_BY_HOP.has(name) && typeof value === "string") out[name] = value;
    }
    answer(res, upstream.status, { ...out, ...clientHeaders }, req.method === "HEAD" ? "" : upstream.body);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}

function answer(
  res: http.ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: string | Buffer,
) {
  res.writeHead(status, { ...headers, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => resolve(Buffer.concat(chunks)));
    stream.on("error", reject);
  });
}

/** Envoy's route timeout where a route sets none, and its connect_timeout where a cluster does. */
const ENVOY_DEFAULT_ROUTE_TIMEOUT = "15s";
const ENVOY_DEFAULT_CONNECT_TIMEOUT = "5s";

/** A proto Duration as the generated config writes it ("0.5s") in milliseconds. */
function milliseconds(duration: string): number {
  return Number.parseFloat(duration) * 1000;
}

/** The whole answer did not come within the deadline (the route's timeout; ext_authz's own). */
const TIMED_OUT = new Error("timeout");

/** One exchange, whole within timeoutMs; the connection made within connectTimeoutMs when given. */
function call(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: Buffer,
  timeoutMs: number,
  connectTimeoutMs?: number,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      readAll(res).then(
        (text) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }),
        reject,
      );
    });
    const deadline = setTimeout(() => req.destroy(TIMED_OUT), timeoutMs);
    if (connectTimeoutMs !== undefined) {
      const connecting = setTimeout(() => req.destroy(new Error("connection timeout")), connectTimeoutMs);
      req.on("socket", (socket) => socket.once("connect", () => clearTimeout(connecting)));
      req.on("close", () => clearTimeout(connecting));
    }
    req.on("close", () => clearTimeout(deadline));
    req.on("error", reject);
    req.end(body.length > 0 ? body : undefined);
  });
}

// Decision mode over real HTTP, as each proxy calls it (the whole matrix through a real nginx is
// test/slow/plugin-mode-matrix.test.ts), and the proxy configs generated from the document.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "yaml";
import policies from "../policies/index.ts";
import { validateConfig } from "../src/config.ts";
import { caddyConfig } from "../src/decision/caddy-config.ts";
import { CARRIED_ANSWER_HEADER } from "../src/decision/carried-answer.ts";
import { envoyConfig } from "../src/decision/envoy-config.ts";
import { haproxyConfig } from "../src/decision/haproxy-config.ts";
import { nginxConfig } from "../src/decision/nginx-config.ts";
import { contractOf } from "../src/decision/proxy-config.ts";
import type { ProxyContract } from "../src/decision/proxy-contract.ts";
import { traefikConfig } from "../src/decision/traefik-config.ts";
import { coreCatalogue } from "../src/errors.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { type KeysFile, writeKeysFile } from "./support/keys.ts";
import { PROJECT_ROOT } from "./support/program.ts";

const ADDRESSES = {
  decisionUrl: "http://127.0.0.1:9000",
  upstreamUrl: "http://pets:3000/v1",
  listenPort: 8080,
  timeoutMs: 1000,
};

/** The contract of a decision-mode gateway whose backend timeouts are not the defaults: 1.5 s and 7 s. */
async function contractWithBackendTimeouts(): Promise<ProxyContract> {
  const keys = writeKeysFile(["alice"]);
  const config = validateConfig(
    {
      mode: "decision",
      upstream: { connectTimeoutMs: 1500, timeoutMs: 7000 },
      policies: { auth: { keysFile: keys.file } },
    },
    policies,
  );
  return contractOf(config, policies);
}

describe("a gateway in decision mode", () => {
  let keys: KeysFile;
  let gw: TestGateway;
  const nginxCall = (uri: string, headers: Record<string, string> = {}, method = "GET") =>
    request(`${gw.origin}/decide/nginx`, {
      headers: {
        "x-original-method": method,
        "x-original-uri": uri,
        "x-forwarded-for": "203.0.113.9",
        ...headers,
      },
    });
  before(async () => {
    keys = writeKeysFile(["alice"]);
    gw = await startGateway({
      upstreamUrl: "",
      // The proxy is this test at 127.0.0.1; a call from 127.0.0.2 is from a peer not trusted.
      config: {
        mode: "decision",
        server: { trustedProxies: ["127.0.0.1"] },
        policies: { auth: { keysFile: keys.file } },
      },
    });
  });
  after(() => gw.close());

  test("nginx's door allows with 200, the consumer and Authorization for the backend, and the clamped target", async () => {
    const answer = await nginxCall("/v1/pets?limit=1000", {
      authorization: `Bearer ${keys.key}`,
      "x-consumer": "mallory",
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers["x-gateway-upstream-uri"], "/pets?limit=100");
    assert.equal(answer.headers["x-gateway-upstream-x-consumer"], "alice");
    assert.equal(answer.headers["x-gateway-upstream-authorization"], `Bearer ${keys.key}`);
    assert.equal(answer.headers["x-limit-applied"], "100");
    const line = gw.logs.lines.find((l) => l.msg === "request" && l.reqId === answer.headers["x-request-id"]);
    assert.equal(line?.decidedFor, "nginx");
    assert.equal(line?.decision, "allow");
    assert.equal(line?.path, "/v1/pets?limit=1000");
  });

  test("without an exporter, a decision's access line names the trace its call carried, and the allow answer sets none", async () => {
    const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const answer = await nginxCall("/v1/pets", {
      authorization: `Bearer ${keys.key}`,
      traceparent: `00-${trace}-00f067aa0ba902b7-01`,
    });
    assert.equal(answer.status, 200);
    // nginx forwards the client's own traceparent to the backend: nothing to replace it with.
    assert.equal(answer.headers.traceparent, undefined);
    const line = gw.logs.lines.find((l) => l.msg === "request" && l.reqId === answer.headers["x-request-id"]);
    assert.equal(line?.trace_id, trace);
    assert.equal(line?.span_id, "00f067aa0ba902b7");
  });

  test("nginx's door reads the original request only from X-Original-*, never from X-Forwarded-Uri or -Method", async () => {
    const answer = await nginxCall("/v1/pets", {
      authorization: `Bearer ${keys.key}`,
      "x-forwarded-uri": "/v1/pets/7",
      "x-forwarded-method": "POST",
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers["x-gateway-upstream-uri"], "/pets?limit=20");
  });

  test("nginx's door refuses a call that does not say the original request, so nginx fails closed", async () => {
    const answer = await request(`${gw.origin}/decide/nginx`, { key: keys.key });
    // Neither 2xx nor 401/403: nginx's auth_request answers the client 500.
    assert.equal(answer.status, 400);
    assert.equal(answer.headers[CARRIED_ANSWER_HEADER], undefined);
  });

  test("a refusal through nginx is 403 carrying the real answer, which the render endpoint writes as it is, counting nothing", async () => {
    const refused = await nginxCall("/v1/pets", { "x-request-id": "decision-no-key-1" });
    assert.equal(refused.status, 403);
    const carried = refused.headers[CARRIED_ANSWER_HEADER];
    assert.equal(typeof carried, "string");
    const rendered = await request(`${gw.origin}/decide/nginx/deny`, {
      headers: { [CARRIED_ANSWER_HEADER]: carried as string },
    });
    assert.equal(rendered.status, 401);
    assert.equal(rendered.headers["www-authenticate"], "Bearer");
    assert.equal(rendered.json<{ code: string }>().code, "MISSING_API_KEY");
    assert.equal(rendered.headers["x-request-id"], "decision-no-key-1");
    const lines = gw.logs.lines.filter((l) => l.msg === "request" && l.reqId === "decision-no-key-1");
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.status, 401);
    assert.equal(lines[0]?.code, "MISSING_API_KEY");
  });

  test("the render endpoint answers 500 to a carried answer it did not write, and never a success", async () => {
    for (const value of [
      "",
      "not base64 json",
      Buffer.from('{"status":200,"headers":{},"body":"ok"}').toString("base64"),
    ]) {
      const rendered = await request(`${gw.origin}/decide/nginx/deny`, {
        headers: { [CARRIED_ANSWER_HEADER]: value },
      });
      assert.equal(rendered.status, 500, value);
    }
  });

  test("Envoy's door answers a refusal with the real status, headers and Error body, the request body judged", async () => {
    const answer = await request(`${gw.origin}/decide/envoy/v1/pets`, {
      method: "POST",
      key: keys.key,
      headers: { "x-forwarded-for": "198.51.100.7, 203.0.113.9" },
      body: '{"name":"Rex"}',
    });
    assert.equal(answer.status, 400);
    assert.equal(answer.json<{ code: string }>().code, "INVALID_BODY");
  });

  test("Envoy's door allows with the owned headers under their names and the target for the Lua step", async () => {
    const answer = await request(`${gw.origin}/decide/envoy/v1/pets?limit=0`, {
      key: keys.key,
      headers: { "x-forwarded-for": "203.0.113.9" },
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers["x-consumer"], "alice");
    assert.equal(answer.headers["x-gateway-upstream-uri"], "/pets?limit=1");
  });

  test("Caddy's door reads the original request from X-Forwarded-Method and -Uri, and never a client's X-Original-URI", async () => {
    const answer = await request(`${gw.origin}/decide/caddy`, {
      key: keys.key,
      headers: {
        "x-forwarded-method": "GET",
        "x-forwarded-uri": "/v1/pets?limit=1000",
        "x-forwarded-for": "203.0.113.9",
        "x-original-uri": "/v1/pets/7",
      },
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers["x-gateway-upstream-uri"], "/pets?limit=100");
    assert.equal(answer.headers["x-gateway-upstream-x-consumer"], "alice");
    assert.equal(answer.headers["x-limit-applied"], "100");
  });

  test("a proxy that sends no body gets proxy mode's 413 for a declared length over the cap", async () => {
    for (const [door, original] of [
      ["caddy", { "x-forwarded-method": "POST", "x-forwarded-uri": "/v1/pets" }],
      ["haproxy", { "x-original-method": "POST", "x-original-uri": "/v1/pets" }],
    ] as const) {
      const answer = await request(`${gw.origin}/decide/${door}`, {
        key: keys.key,
        headers: {
          ...original,
          "x-forwarded-for": "203.0.113.9",
          "content-type": "application/json",
          "x-original-content-length": "70000",
        },
      });
      assert.equal(answer.status, 413, door);
      assert.equal(answer.json<{ code: string }>().code, "PAYLOAD_TOO_LARGE", door);
    }
  });

  test("Traefik's door judges the body forwardBody sends, and allows with the owned headers under their names", async () => {
    const headers = {
      "x-forwarded-method": "POST",
      "x-forwarded-uri": "/v1/pets",
      "x-forwarded-for": "203.0.113.9",
      // Traefik's (Go's) client sends the body of its GET chunked.
      "transfer-encoding": "chunked",
    };
    const refused = await request(`${gw.origin}/decide/traefik`, {
      key: keys.key,
      headers,
      body: '{"name":"Rex"}',
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.json<{ code: string }>().code, "INVALID_BODY");
    const allowed = await request(`${gw.origin}/decide/traefik`, {
      key: keys.key,
      headers,
      body: '{"name":"Rex","categoryId":1}',
    });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers["x-consumer"], "alice");
  });

  test("a door's call without the original request is refused as it is, so the proxy fails closed", async () => {
    for (const door of ["caddy", "traefik", "haproxy"]) {
      const answer = await request(`${gw.origin}/decide/${door}`, { key: keys.key });
      assert.equal(answer.status, 400, door);
    }
  });

  test("the client is the address the proxy set only when the call comes from a trusted proxy, else the peer", async () => {
    const clientOf = async (reqId: string, localAddress: string, door: "nginx" | "envoy") => {
      const headers = { authorization: `Bearer ${keys.key}`, "x-request-id": reqId };
      const answer =
        door === "nginx"
          ? await request(`${gw.origin}/decide/nginx`, {
              localAddress,
              headers: {
                ...headers,
                "x-original-method": "GET",
                "x-original-uri": "/v1/pets/7",
                "x-forwarded-for": "203.0.113.9",
              },
            })
          : await request(`${gw.origin}/decide/envoy/v1/pets/7`, {
              localAddress,
              // Envoy appends the client's address to what the client sent.
              headers: { ...headers, "x-forwarded-for": "198.51.100.66, 203.0.113.9" },
            });
      assert.equal(answer.status, 200);
      // The deprecated call's line names the client.
      const line = gw.logs.lines.find((l) => l.msg === "deprecated call" && l.reqId === reqId);
      return line?.clientAddress;
    };
    assert.equal(await clientOf("client-nginx-trusted", "127.0.0.1", "nginx"), "203.0.113.9");
    assert.equal(await clientOf("client-envoy-trusted", "127.0.0.1", "envoy"), "203.0.113.9");
    assert.equal(await clientOf("client-nginx-stranger", "127.0.0.2", "nginx"), "127.0.0.2");
    assert.equal(await clientOf("client-envoy-stranger", "127.0.0.2", "envoy"), "127.0.0.2");
  });

  test("a request that is not a decision call gets 404, as a path of no operation does", async () => {
    const answer = await request(`${gw.origin}/v1/pets`, { key: keys.key });
    assert.equal(answer.status, 404);
    assert.equal(answer.json<{ code: string }>().code, "NOT_FOUND");
  });
});

describe("the proxy configs generated from the document", () => {
  let contract: ProxyContract;
  before(async () => {
    const keys = writeKeysFile(["alice"]);
    const config = validateConfig(
      { mode: "decision", policies: { auth: { keysFile: keys.file } } },
      policies,
    );
    contract = await contractOf(config, policies);
  });

  test("nginx sets every header the gateway owns only from the decision, and asks before every location", () => {
    const config = nginxConfig(contract, ADDRESSES);
    assert.deepEqual(contract.upstreamHeaders, ["x-consumer", "authorization"]);
    assert.match(config, /proxy_set_header X-Consumer \$gw_up_x_consumer;/);
    assert.match(config, /proxy_set_header Authorization \$gw_up_authorization;/);
    assert.match(config, /proxy_set_header X-Original-Uri \$request_uri;/);
    assert.match(config, /proxy_set_header X-Original-Method \$request_method;/);
    assert.match(config, /proxy_pass http:\/\/gateway_backend\/v1\$gw_upstream_uri;/);
    assert.match(config, /error_page 401 403 = @gateway_deny;/);
    assert.match(config, new RegExp(`client_max_body_size ${contract.maxRequestBodyBytes};`));
    assert.equal(config.match(/auth_request \//g)?.length, 1);
  });

  test("nginx answers its own 502 and 504 on the backend leg with the catalogue's Error object, after proxy mode's timeouts", async () => {
    const contract = await contractWithBackendTimeouts();
    const nginx = nginxConfig(contract, ADDRESSES);
    const main = nginx.slice(nginx.indexOf("location / {"), nginx.indexOf("location = "));
    assert.match(main, /proxy_connect_timeout 1500ms;\n/);
    assert.match(main, /proxy_read_timeout 7000ms;\n/);
    assert.match(main, /error_page 502 = @gateway_backend_unavailable;\n/);
    assert.match(main, /error_page 504 = @gateway_backend_timeout;\n/);
    // The backend's own 5xx passes as it is.
    assert.doesNotMatch(nginx, /proxy_intercept_errors/);
    const returned = (location: string) => {
      const block = nginx.slice(nginx.indexOf(`location ${location} {`));
      const found = /return (\d+) '(.*)';$/m.exec(block.slice(0, block.indexOf("\n    }")));
      assert.ok(found, location);
      return { status: Number(found[1]), error: JSON.parse(found[2] as string) };
    };
    const unavailable = coreCatalogue.UPSTREAM_UNAVAILABLE;
    assert.deepEqual(returned("@gateway_backend_unavailable"), {
      status: 502,
      error: { code: "UPSTREAM_UNAVAILABLE", message: unavailable.message, status: unavailable.status },
    });
    assert.deepEqual(returned("@gateway_backend_timeout"), {
      status: 504,
      error: { code: "UPSTREAM_TIMEOUT", message: "The backend did not answer within 7000 ms", status: 504 },
    });
  });

  test("nginx answers auth_request's 500, a decision that failed, with the catalogue's DECISION_UNAVAILABLE", () => {
    const nginx = nginxConfig(contract, ADDRESSES);
    const main = nginx.slice(nginx.indexOf("location / {"), nginx.indexOf("location = "));
    assert.match(main, /error_page 500 = @gateway_decision_unavailable;\n/);
    const start = nginx.indexOf("location @gateway_decision_unavailable {");
    assert.ok(start > 0);
    const block = nginx.slice(start, nginx.indexOf("\n    }", start));
    const { message } = coreCatalogue.DECISION_UNAVAILABLE;
    assert.match(block, /types \{ \}\n {6}default_type application\/json;\n/);
    assert.match(block, /add_header X-Content-Type-Options nosniff always;\n/);
    assert.match(block, /add_header Cache-Control no-store always;\n/);
    // No decision came: none of its headers, and no request id nginx would make up.
    assert.doesNotMatch(block, /\$gw_|X-Request-Id/);
    const found = /return 503 '(.*)';$/m.exec(block);
    // As nginx reads a quoted string: \' and \\ stand for the character after the backslash.
    const body = (found?.[1] ?? "").replace(/\\(.)/g, "$1");
    assert.deepEqual(JSON.parse(body), { code: "DECISION_UNAVAILABLE", message, status: 503 });
  });

  test("HAProxy answers its own 502, 503 and 504 on the backend leg with the catalogue's Error object, after proxy mode's timeouts", async () => {
    const contract = await contractWithBackendTimeouts();
    const haproxy = haproxyConfig(contract, ADDRESSES);
    // Only the backend's: the decision's failures, answered in the frontend, keep HAProxy's own.
    const frontend = haproxy.slice(0, haproxy.indexOf("backend gateway_backend"));
    const backend = haproxy.slice(haproxy.indexOf("backend gateway_backend"));
    assert.doesNotMatch(frontend, /http-error|http-after-response|timeout (connect|server)/);
    assert.match(backend, /\n {2}timeout connect 1500ms\n {2}timeout server 7000ms\n/);
    const answered = (status: number) => {
      const found = new RegExp(
        `^ {2}http-error status ${status} content-type application/json string '(.*)' hdr cache-control no-store hdr x-content-type-options nosniff$`,
        "m",
      ).exec(backend);
      assert.ok(found, String(status));
      return JSON.parse(found[1] as string);
    };
    const unavailable = {
      code: "UPSTREAM_UNAVAILABLE",
      message: coreCatalogue.UPSTREAM_UNAVAILABLE.message,
      status: 502,
    };
    assert.deepEqual(answered(502), unavailable);
    assert.deepEqual(answered(503), unavailable);
    assert.deepEqual(answered(504), {
      code: "UPSTREAM_TIMEOUT",
      message: "The backend did not answer within 7000 ms",
      status: 504,
    });
    // HAProxy's 503 says 502, as its body does; never an answer the backend sent.
    assert.match(
      backend,
      /http-response set-var\(txn\.gw_backend_answered\) bool\(true\)\n {2}http-after-response set-status 502 if \{ status 503 \} !\{ var\(txn\.gw_backend_answered\) -m bool \}\n/,
    );
  });

  test("Envoy and Traefik give the backend leg proxy mode's timeouts, the decision keeping its own", async () => {
    const timed = await contractWithBackendTimeouts();
    const envoy = parse(envoyConfig(timed, ADDRESSES)).static_resources;
    const clusters = Object.fromEntries(
      envoy.clusters.map((cluster: { name: string; connect_timeout: string }) => [
        cluster.name,
        cluster.connect_timeout,
      ]),
    );
    assert.deepEqual(clusters, { gateway_decision: "1s", gateway_backend: "1.5s" });
    const manager = envoy.listeners[0].filter_chains[0].filters[0].typed_config;
    assert.deepEqual(manager.route_config.virtual_hosts[0].routes[0].route, {
      cluster: "gateway_backend",
      timeout: "7s",
    });
    const traefik = parse(traefikConfig(timed, ADDRESSES)).http;
    const transport = traefik.services["gateway-backend"].loadBalancer.serversTransport;
    assert.deepEqual(traefik.serversTransports[transport].forwardingTimeouts, {
      dialTimeout: "1500ms",
      responseHeaderTimeout: "7000ms",
    });
  });

  test("Envoy fails closed, strips the owned headers first, and sends what validation reads with the body", () => {
    const bootstrap = parse(envoyConfig(contract, ADDRESSES));
    const filters =
      bootstrap.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters;
    const authz = filters[1].typed_config;
    assert.equal(authz.failure_mode_allow, false);
    assert.equal(authz.status_on_error.code, 503);
    assert.equal(authz.with_request_body.max_request_bytes, contract.maxRequestBodyBytes + 1);
    assert.equal(authz.http_service.path_prefix, "/decide/envoy");
    const allowed = authz.allowed_headers.patterns.map((p: { exact: string }) => p.exact);
    for (const name of [
      "content-type",
      "content-encoding",
      "origin",
      "x-request-id",
      "traceparent",
      "x-forwarded-for",
    ]) {
      assert.ok(allowed.includes(name), name);
    }
    assert.match(filters[0].typed_config.default_source_code.inline_string, /remove\("x-consumer"\)/);
  });

  test("docs/plugin-mode.md shows the configs the generator makes for the Pet Store document", () => {
    const page = readFileSync(join(PROJECT_ROOT, "docs/plugin-mode.md"), "utf8");
    const shown = { ...ADDRESSES, decisionUrl: "http://gateway:9000" };
    const block = (language: string) => page.split(`\`\`\`${language}\n`)[1]?.split("```\n")[0];
    assert.equal(
      block("nginx"),
      nginxConfig(contract, shown),
      "regenerate the nginx block of docs/plugin-mode.md",
    );
    assert.equal(
      block("yaml"),
      envoyConfig(contract, shown),
      "regenerate the Envoy block of docs/plugin-mode.md",
    );
  });

  test("docs/plugin-mode/<proxy>.md shows the config the generator makes for the Pet Store document, and the Lua it loads", () => {
    const shown = { ...ADDRESSES, decisionUrl: "http://gateway:9000" };
    const block = (page: string, language: string) => page.split(`\`\`\`${language}\n`)[1]?.split("```\n")[0];
    const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), "utf8");
    for (const [proxy, language, generate] of [
      ["caddy", "caddyfile", caddyConfig],
      ["traefik", "yaml", traefikConfig],
      ["haproxy", "haproxy", haproxyConfig],
    ] as const) {
      const page = read(`docs/plugin-mode/${proxy}.md`);
      assert.equal(
        block(page, language),
        generate(contract, shown),
        `regenerate docs/plugin-mode/${proxy}.md`,
      );
    }
    assert.equal(
      block(read("docs/plugin-mode/haproxy.md"), "lua"),
      read("deploy/haproxy/gateway-decide.lua"),
      "copy deploy/haproxy/gateway-decide.lua into docs/plugin-mode/haproxy.md",
    );
  });

  test("Caddy, Traefik and HAProxy delete every owned header before the decision and fail closed", () => {
    const caddy = caddyConfig(contract, ADDRESSES);
    const stripped = caddy.slice(0, caddy.indexOf("reverse_proxy"));
    assert.match(stripped, /request_header -X-Consumer\n/);
    assert.match(caddy, /@allowed status 200\n/);
    assert.match(caddy, /rewrite \* \/v1\{rp\.header\.X-Gateway-Upstream-Uri\}\?\n/);
    const traefik = parse(traefikConfig(contract, ADDRESSES)).http.middlewares["gateway-decide"].forwardAuth;
    assert.equal(traefik.trustForwardHeader, false);
    assert.deepEqual(traefik.authResponseHeaders, ["X-Consumer", "Authorization", "X-Request-Id"]);
    assert.equal(traefik.maxBodySize, contract.maxRequestBodyBytes + 1);
    const haproxy = haproxyConfig(contract, ADDRESSES);
    assert.ok(haproxy.indexOf("del-header x-consumer") < haproxy.indexOf("lua.gateway_decide"));
    assert.match(haproxy, /http-request deny deny_status 500 unless \{ var\(txn\.gw_allowed\) -m bool \}/);
    assert.match(haproxy, /lua-load \/etc\/haproxy\/gateway-decide\.lua/);
  });

  test("npm run proxy-config prints nginx's config for the document, and refuses a proxy it has no door for", () => {
    const keys = writeKeysFile(["alice"]);
    const env = { ...process.env, API_KEYS_FILE: keys.file };
    const run = (args: string[]) =>
      spawnSync(process.execPath, ["scripts/proxy-config.ts", ...args], {
        cwd: PROJECT_ROOT,
        env,
        encoding: "utf8",
      });
    const ok = run([
      "nginx",
      "--decision-url",
      "http://127.0.0.1:9000",
      "--upstream-url",
      "http://pets:3000/v1",
    ]);
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /auth_request \/_gateway\/decide;/);
    const refused = run(["apache", "--decision-url", "http://a", "--upstream-url", "http://b"]);
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /must be one of nginx, envoy, caddy, traefik, haproxy/);
  });

  test("npm run proxy-config --output writes the config to a file where the command was typed, nothing to stdout", () => {
    const keys = writeKeysFile(["alice"]);
    const typedIn = mkdtempSync(join(tmpdir(), "proxy-config-"));
    // npm runs a script in the project's directory and says where it was typed in INIT_CWD.
    const env = { ...process.env, API_KEYS_FILE: keys.file, INIT_CWD: typedIn };
    const run = (args: string[]) =>
      spawnSync(process.execPath, ["scripts/proxy-config.ts", ...args], {
        cwd: PROJECT_ROOT,
        env,
        encoding: "utf8",
      });
    const addresses = ["--decision-url", "http://127.0.0.1:9000", "--upstream-url", "http://pets:3000/v1"];
    try {
      const written = run(["nginx", ...addresses, "--output", "nginx.conf"]);
      assert.equal(written.status, 0, written.stderr);
      assert.equal(written.stdout, "");
      const config = readFileSync(join(typedIn, "nginx.conf"), "utf8");
      // The whole config and nothing before it: its first line is the generator's own.
      assert.match(config, /^# Generated by `npm run proxy-config -- nginx` from Pet Store\.\n/);
      assert.match(config, /auth_request \/_gateway\/decide;/);
      assert.match(config, /\n\}\n$/);
      assert.match(written.stderr, /nginx's config written to .*nginx\.conf/);
      const nowhere = run(["nginx", ...addresses, "--output", "no/such/directory/nginx.conf"]);
      assert.equal(nowhere.status, 1);
      assert.match(nowhere.stderr, /^proxy-config: cannot write .*no\/such\/directory\/nginx\.conf: /);
      assert.deepEqual(readdirSync(typedIn), ["nginx.conf"]);
    } finally {
      rmSync(typedIn, { recursive: true, force: true });
    }
  });
});

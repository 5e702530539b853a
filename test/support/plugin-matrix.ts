// The plugin-mode matrix: each case sent to the gateway in proxy mode, and to nginx, Caddy and
// HAProxy (real, each with its generated config) and Envoy and Traefik (harnesses, with their
// generated configs) in front of the gateway in decision mode, all before one recording backend. What the client sees and what the
// backend received must be identical to proxy mode, or the difference is stated here, with its
// reason; the capability table (docs/plugin-mode/capabilities.md) is rendered from the results.

import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import policies from "../../policies/index.ts";
import { DEPRECATED_CALL_MSG } from "../../policies/lifecycle/deprecation-report.ts";
import { validateConfig } from "../../src/config.ts";
import { caddyConfig } from "../../src/decision/caddy-config.ts";
import { because, PROXY_CAPABILITIES, PROXY_NAMES, type ProxyName } from "../../src/decision/capabilities.ts";
import { envoyConfig } from "../../src/decision/envoy-config.ts";
import { haproxyConfig } from "../../src/decision/haproxy-config.ts";
import { nginxConfig } from "../../src/decision/nginx-config.ts";
import { contractOf } from "../../src/decision/proxy-config.ts";
import { traefikConfig } from "../../src/decision/traefik-config.ts";
import {
  jsonAnswer,
  type ProgrammableBackend,
  startProgrammableBackend,
} from "../fixtures/programmable-backend.ts";
import { caddySkipReason, startCaddy } from "./caddy.ts";
import { startEnvoyHarness } from "./envoy-harness.ts";
import { startGateway, type TestGateway } from "./gateway.ts";
import { HAPROXY_LUA, haproxySkipReason, startHaproxy } from "./haproxy.ts";
import { request } from "./http.ts";
import { writeKeysFileAt } from "./keys.ts";
import { freePort, nginxSkipReason, startNginx } from "./nginx.ts";
import { startTraefikHarness } from "./traefik-harness.ts";

export type Proxy = ProxyName;
export const PROXIES: readonly Proxy[] = PROXY_NAMES;
export const SIMULATED: ReadonlySet<Proxy> = new Set(["envoy", "traefik"]);

/** Why the matrix cannot run here (a proxy it runs for real is missing), or undefined. */
export function matrixSkipReason(): string | undefined {
  return nginxSkipReason() ?? caddySkipReason() ?? haproxySkipReason();
}

/** How long the decision may take before a proxy fails closed, in every generated config. */
const DECISION_TIMEOUT_MS = 1000;
/** The backend's deadline (upstream.timeoutMs) where the backend is slow, and how late it answers. */
const SHORT_UPSTREAM_TIMEOUT_MS = 500;
const LATE_BACKEND_MS = 2000;

type World = "pass" | "strip" | "replace" | "down" | "slow" | "500" | "backend-down" | "backend-slow";
type Clock = "now" | "sunset" | "brownout";

export interface Case {
  readonly name: string;
  readonly what: string;
  readonly method?: string;
  readonly path: string;
  readonly key?: "alice" | "expired" | "unknown";
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly world?: World;
  readonly clock?: Clock;
  /** Headers a client sent to steer the gateway: none may take effect. */
  readonly spoof?: true;
  /** Proxy mode refuses it for its body's bytes: a proxy that sends the decision no body cannot. */
  readonly judgesBody?: true;
}

const PET = '{"name":"Rex","categoryId":1}';
// An allowed spoofed call names its limit: the backend's URL then shows a spoof taking effect on
// every proxy, Traefik included (it cannot default the limit).
const SPOOF_URI = "/v1/pets/7?limit=1";

export const CASES: readonly Case[] = [
  { name: "list", what: "GET /pets with a key", path: "/v1/pets?limit=5", key: "alice" },
  {
    name: "list-status",
    what: "GET /pets with a status filter",
    path: "/v1/pets?status=available&limit=5",
    key: "alice",
  },
  {
    name: "create",
    what: "POST /pets with a valid body",
    method: "POST",
    path: "/v1/pets",
    key: "alice",
    body: PET,
  },
  {
    name: "deprecated",
    what: "the deprecated GET /pets/{petId}: headers, counted once",
    path: "/v1/pets/7",
    key: "alice",
  },
  { name: "head", what: "HEAD /pets", method: "HEAD", path: "/v1/pets?limit=5", key: "alice" },
  { name: "no-key", what: "no key", path: "/v1/pets" },
  { name: "bad-key", what: "an unknown key", path: "/v1/pets", key: "unknown" },
  { name: "expired-key", what: "an expired key", path: "/v1/pets", key: "expired" },
  {
    name: "not-bearer",
    what: "Authorization that is not Bearer",
    path: "/v1/pets",
    headers: { authorization: "Basic YWxpY2U6eA==" },
  },
  {
    name: "spoof-consumer",
    what: "spoofed X-Consumer on an allowed call",
    path: "/v1/pets?limit=5",
    key: "alice",
    headers: { "x-consumer": "mallory" },
    spoof: true,
  },
  {
    name: "spoof-consumer-denied",
    what: "spoofed X-Consumer without a key",
    path: "/v1/pets",
    headers: { "x-consumer": "alice" },
    spoof: true,
  },
  {
    name: "spoof-consumer-bad-key",
    what: "spoofed X-Consumer with an unknown key",
    path: "/v1/pets",
    key: "unknown",
    headers: { "x-consumer": "alice" },
    spoof: true,
  },
  {
    name: "spoof-consumer-underscore",
    what: "spoofed x_consumer on an allowed call",
    path: "/v1/pets?limit=5",
    key: "alice",
    headers: { x_consumer: "mallory" },
    spoof: true,
  },
  {
    name: "spoof-original-uri",
    what: "spoofed X-Original-URI on an allowed call",
    path: "/v1/pets?limit=5",
    key: "alice",
    headers: { "x-original-uri": SPOOF_URI },
    spoof: true,
  },
  {
    name: "spoof-original-uri-denied",
    what: "spoofed X-Original-URI on an unknown path",
    path: "/v1/nowhere",
    key: "alice",
    headers: { "x-original-uri": "/v1/pets" },
    spoof: true,
  },
  {
    name: "spoof-forwarded-uri",
    what: "spoofed X-Forwarded-Uri on an allowed call",
    path: "/v1/pets?limit=5",
    key: "alice",
    headers: { "x-forwarded-uri": SPOOF_URI },
    spoof: true,
  },
  {
    name: "spoof-forwarded-method",
    what: "spoofed X-Forwarded-Method on an allowed call",
    path: "/v1/pets?limit=5",
    key: "alice",
    headers: { "x-forwarded-method": "POST" },
    spoof: true,
  },
  {
    name: "spoof-forwarded-method-denied",
    what: "spoofed X-Forwarded-Method on a wrong method",
    method: "DELETE",
    path: "/v1/pets",
    key: "alice",
    headers: { "x-forwarded-method": "GET" },
    spoof: true,
  },
  {
    name: "spoof-original-method-denied",
    what: "spoofed X-Original-Method on a wrong method",
    method: "PUT",
    path: "/v1/pets/7",
    key: "alice",
    headers: { "x-original-method": "GET" },
    spoof: true,
  },
  {
    name: "spoof-original-uri-anonymous",
    what: "spoofed X-Original-URI without a key",
    path: "/v1/pets",
    headers: { "x-original-uri": SPOOF_URI },
    spoof: true,
  },
  {
    name: "authorization-pass",
    what: "Authorization with upstreamAuthorization pass",
    path: "/v1/pets",
    key: "alice",
  },
  {
    name: "authorization-strip",
    what: "Authorization with upstreamAuthorization strip",
    path: "/v1/pets",
    key: "alice",
    world: "strip",
  },
  {
    name: "authorization-replace",
    what: "Authorization with upstreamAuthorization replace",
    path: "/v1/pets",
    key: "alice",
    world: "replace",
  },
  {
    name: "query-invalid",
    what: "an invalid query parameter",
    path: "/v1/pets?status=sleeping",
    key: "alice",
  },
  {
    name: "query-duplicated",
    what: "a duplicated query parameter",
    path: "/v1/pets?limit=1&limit=2",
    key: "alice",
  },
  { name: "query-unknown", what: "an unknown query parameter", path: "/v1/pets?colour=red", key: "alice" },
  { name: "limit-absent", what: "limit absent (defaulted)", path: "/v1/pets", key: "alice" },
  { name: "limit-0", what: "limit=0 (clamped up)", path: "/v1/pets?limit=0", key: "alice" },
  { name: "limit-1000", what: "limit=1000 (clamped down)", path: "/v1/pets?limit=1000", key: "alice" },
  { name: "limit-abc", what: "limit=abc", path: "/v1/pets?limit=abc", key: "alice" },
  {
    name: "body-invalid",
    what: "a body that breaks the schema",
    method: "POST",
    path: "/v1/pets",
    key: "alice",
    body: '{"name":"Rex"}',
    judgesBody: true,
  },
  {
    name: "body-malformed",
    what: "a body that is not JSON",
    method: "POST",
    path: "/v1/pets",
    key: "alice",
    body: '{"name":',
    judgesBody: true,
  },
  {
    name: "body-media-type",
    what: "a body of another media type",
    method: "POST",
    path: "/v1/pets",
    key: "alice",
    body: PET,
    headers: { "content-type": "text/plain" },
  },
  {
    name: "body-oversize",
    what: "a body over the cap",
    method: "POST",
    path: "/v1/pets",
    key: "alice",
    body: `{"name":"${"x".repeat(70_000)}","categoryId":1}`,
  },
  {
    name: "sunset",
    what: "the deprecated operation after its sunset",
    path: "/v1/pets/7",
    key: "alice",
    clock: "sunset",
  },
  {
    name: "brownout",
    what: "the deprecated operation in a brownout",
    path: "/v1/pets/7",
    key: "alice",
    clock: "brownout",
  },
  { name: "unknown-path", what: "a path of no operation", path: "/v1/nowhere", key: "alice" },
  {
    name: "wrong-method",
    what: "a wrong method (405, Allow)",
    method: "DELETE",
    path: "/v1/pets",
    key: "alice",
  },
  {
    name: "cors-preflight",
    what: "a CORS preflight",
    method: "OPTIONS",
    path: "/v1/pets",
    headers: { origin: ORIGIN(), "access-control-request-method": "GET" },
  },
  {
    name: "cors-call",
    what: "a cross-origin call",
    path: "/v1/pets",
    key: "alice",
    headers: { origin: ORIGIN() },
  },
  {
    name: "backend-down",
    what: "the backend down (nothing listens)",
    path: "/v1/pets",
    key: "alice",
    world: "backend-down",
  },
  {
    name: "backend-slow",
    what: "the backend slower than upstream.timeoutMs",
    path: "/v1/pets",
    key: "alice",
    world: "backend-slow",
  },
  // The backend's own 5xx, in the statuses a proxy itself answers a backend or a decision fault
  // with: none may take it for its own fault (backendAnswer answers these cases by their request id).
  { name: "backend-500", what: "the backend answering its own 500", path: "/v1/pets?limit=5", key: "alice" },
  { name: "backend-502", what: "the backend answering its own 502", path: "/v1/pets?limit=5", key: "alice" },
  { name: "backend-503", what: "the backend answering its own 503", path: "/v1/pets?limit=5", key: "alice" },
  { name: "backend-504", what: "the backend answering its own 504", path: "/v1/pets?limit=5", key: "alice" },
  { name: "decision-down", what: "the decision service down", path: "/v1/pets", key: "alice", world: "down" },
  {
    name: "decision-slow",
    what: "the decision service too slow",
    path: "/v1/pets",
    key: "alice",
    world: "slow",
  },
  {
    name: "decision-500",
    what: "the decision service answering 500",
    path: "/v1/pets",
    key: "alice",
    world: "500",
  },
];

function ORIGIN(): string {
  return "https://shop.example";
}

const { traefik } = PROXY_CAPABILITIES;
const WITHOUT_HEADERS = "without X-Request-Id, Vary or X-Limit-Applied";
/** The headers WITHOUT_HEADERS names, as the client's answer would carry them. */
const WITHOUT_HEADER_NAMES = ["x-request-id", "vary", "x-limit-applied"] as const;

/** Proxies that cannot add the decision's headers to the client's answer (stated per cell). */
export const NO_CLIENT_HEADERS: ReadonlySet<Proxy> = new Set(
  PROXIES.filter((proxy) => !PROXY_CAPABILITIES[proxy].addsAnswerHeaders),
);

/**
 * What a differing cell is stated to be: the text the capability table shows, and what it claims
 * the test can see, the client's status and, where the text says so, whether the backend was
 * reached ("allowed", "reaches the backend": reached; "fails closed", "before the key is checked":
 * not). The matrix test checks both against what it saw.
 */
export interface Statement {
  readonly status: number;
  readonly reached?: boolean;
  /** "with the limit unchanged": the backend got the client's own target. */
  readonly targetUnchanged?: boolean;
  /** "without X-Request-Id, Vary or X-Limit-Applied", "without Deprecation, …": absent from the client's answer. */
  readonly without?: readonly string[];
  /** "answers 503 DECISION_UNAVAILABLE": the Error object with this code, as application/json. */
  readonly error?: string;
  readonly text: string;
}

/** A proxy answering by itself: the backend never reached. */
const refused = (status: number, text: string): Statement => ({ status, reached: false, text });

/** nginx's answer to a decision that failed: the Error object, with no decision's X-Request-Id. */
const decisionUnavailable = (text: string): Statement => ({
  ...refused(503, text),
  error: "DECISION_UNAVAILABLE",
  without: ["x-request-id"],
});

/**
 * A proxy's cell that differs from proxy mode, and why, where the capability facts do not say it
 * (statedFor below): every such cell is stated, never silent.
 */
const STATED: Readonly<Record<Proxy, Readonly<Record<string, Statement>>>> = {
  nginx: {
    "body-oversize": refused(
      413,
      "413 from nginx itself (client_max_body_size, its own HTML body), before the key is checked",
    ),
    "decision-down": decisionUnavailable(
      "fails closed: nginx answers 503 with the Error object DECISION_UNAVAILABLE, without X-Request-Id (auth_request's 500, replaced)",
    ),
    "decision-slow": decisionUnavailable(
      "fails closed: nginx answers 503 DECISION_UNAVAILABLE after the timeout",
    ),
    "decision-500": decisionUnavailable("fails closed: nginx answers 503 DECISION_UNAVAILABLE"),
  },
  envoy: {
    "backend-down": { status: 503, text: "Envoy answers 503 with its own text (upstream connect error)" },
    "backend-slow": {
      status: 504,
      text: "Envoy answers 504 with its own text (upstream request timeout) after the route's timeout",
    },
    "decision-down": refused(503, "fails closed: Envoy answers 503 (status_on_error)"),
    "decision-slow": refused(503, "fails closed: Envoy answers 503 after the timeout"),
    "decision-500": refused(500, "fails closed: Envoy passes the decision's 500 on"),
  },
  caddy: {
    "decision-down": refused(502, "fails closed: Caddy answers 502"),
    "decision-slow": refused(504, "fails closed: Caddy answers 504 after response_header_timeout"),
    "decision-500": refused(500, "fails closed: Caddy passes the decision's 500 on"),
  },
  traefik: {
    deprecated: {
      status: 200,
      reached: true,
      without: ["deprecation", "sunset", "link"],
      text: `allowed, logged and counted once, but without Deprecation, Sunset and Link: ${because.noAnswerHeaders(traefik)}`,
    },
    "body-oversize": refused(
      401,
      "401 from Traefik itself, no body (forwardBody's maxBodySize), before the key is checked",
    ),
    "cors-preflight": {
      status: 200,
      reached: true,
      text: "reaches the backend: Traefik takes the preflight's 204 as an allow (answer preflights with Traefik's headers middleware)",
    },
    "cors-call": {
      status: 200,
      reached: true,
      targetUnchanged: true,
      without: [...WITHOUT_HEADER_NAMES, "access-control-allow-origin"],
      text: `allowed with the limit unchanged (${because.noTarget(traefik)}), ${WITHOUT_HEADERS}, nor the CORS headers`,
    },
    "backend-down": {
      status: 502,
      without: WITHOUT_HEADER_NAMES,
      text: `Traefik answers 502 with its own text (Bad Gateway), ${WITHOUT_HEADERS}`,
    },
    "backend-slow": {
      status: 504,
      without: WITHOUT_HEADER_NAMES,
      text: `Traefik answers 504 with its own text (Gateway Timeout) after responseHeaderTimeout, ${WITHOUT_HEADERS}`,
    },
    "decision-down": refused(500, "fails closed: Traefik answers 500"),
    "decision-slow": refused(
      500,
      "fails closed: Traefik answers 500 after its client's timeout (30 s in Traefik, not configurable; shortened in the harness)",
    ),
    "decision-500": refused(500, "fails closed: Traefik passes the decision's 500 on"),
  },
  haproxy: {
    "decision-down": refused(503, "fails closed: HAProxy answers 503 (its HTTP client's own error page)"),
    "decision-slow": refused(504, "fails closed: HAProxy answers 504 after the timeout"),
    "decision-500": refused(500, "fails closed: HAProxy passes the decision's 500 on"),
  },
};

/**
 * What a proxy's cell is stated to be, or undefined where it must be the same as proxy mode: the
 * cells above, else what the capability facts say the proxy gives up on this case (the body it
 * never sends; on an allowed call, the target it cannot rewrite and the answer's headers it
 * cannot add), in the words `npm run plan` uses. Those say "allowed": the backend reached, and
 * the client given its answer (proxy mode's status, or the backend's own 201 to a body proxy
 * mode refused).
 */
export function statedFor(proxy: Proxy, row: Row): Statement | undefined {
  const stated = STATED[proxy][row.case.name];
  if (stated !== undefined) return stated;
  const capabilities = PROXY_CAPABILITIES[proxy];
  if (row.case.judgesBody && !capabilities.sendsBody) {
    return {
      status: BACKEND_CREATED,
      reached: true,
      text: `allowed: ${because.noBody(capabilities)}, so body validation is off (the backend validates)`,
    };
  }
  const reference = row.reference;
  const reached = reference?.backend;
  if (reference === undefined || reached === undefined) return undefined;
  const allowed = (text: string, claims: Partial<Statement>): Statement => ({
    status: reference.status,
    reached: true,
    ...claims,
    text,
  });
  const without = capabilities.addsAnswerHeaders ? {} : { without: WITHOUT_HEADER_NAMES };
  // Proxy mode sent the backend another target than the client's: a policy set its query.
  if (!capabilities.takesTarget && reached.url !== row.case.path) {
    const headers = capabilities.addsAnswerHeaders ? "" : `, ${WITHOUT_HEADERS}`;
    return allowed(`allowed with the limit unchanged (${because.noTarget(capabilities)})${headers}`, {
      targetUnchanged: true,
      ...without,
    });
  }
  if (!capabilities.addsAnswerHeaders)
    return allowed(`allowed, ${WITHOUT_HEADERS}: ${because.noAnswerHeaders(capabilities)}`, without);
  return undefined;
}

/** What is compared: the client's answer and the backend's request. */
export interface Seen {
  readonly status: number;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly backend:
    | {
        readonly method: string;
        readonly url: string;
        readonly consumer: string;
        readonly authorization: string;
      }
    | undefined;
  /** Access lines and deprecated-call lines the gateway wrote for the request. */
  readonly accessLines: number;
  readonly deprecatedLines: number;
}

const COMPARED_HEADERS = [
  "content-type",
  "cache-control",
  "www-authenticate",
  "allow",
  "retry-after",
  "deprecation",
  "sunset",
  "link",
  "x-limit-applied",
  "access-control-allow-origin",
  "access-control-allow-methods",
  "access-control-expose-headers",
  "vary",
  "x-request-id",
  "x-content-type-options",
];

export interface Cell {
  readonly proxy: Proxy;
  readonly seen: Seen;
  /** undefined when identical to proxy mode. */
  readonly differences: readonly string[];
}

export interface Row {
  readonly case: Case;
  readonly reference: Seen | undefined;
  readonly cells: readonly Cell[];
}

interface Running {
  /** What the proxies forward to: the shared backend, or the world's own. */
  readonly backend: ProgrammableBackend;
  readonly proxyMode: TestGateway | undefined;
  readonly decision: TestGateway | undefined;
  readonly origins: Readonly<Record<Proxy, string>>;
  close(): Promise<void>;
}

const SUNSET_PASSED = Date.parse("2030-12-06T00:00:00Z");
const BROWNOUT = { start: "2029-01-01T00:00:00Z", end: "2029-01-02T00:00:00Z" };
const IN_BROWNOUT = Date.parse("2029-01-01T12:00:00Z");
const UPSTREAM_CREDENTIAL = "upstream-secret-credential";

/** Runs every case on every proxy and proxy mode; the caller asserts on the rows. */
export async function runMatrix(directory: string): Promise<Row[]> {
  const keysFile = `${directory}/api-keys.json`;
  const keys = {
    alice: "matrix_alice_key_000000000000000000",
    expired: "matrix_carol_key_00000000000000000",
  };
  writeKeysFileAt(keysFile, [
    { consumer: "alice", key: keys.alice },
    { consumer: "carol", key: keys.expired },
  ]);
  // writeKeysFileAt has no expiry: carol's key expires through the file itself.
  const { readFileSync, writeFileSync } = await import("node:fs");
  const file = JSON.parse(readFileSync(keysFile, "utf8")) as { keys: Record<string, unknown>[] };
  (file.keys[1] as Record<string, unknown>).notAfter = "2020-01-01T00:00:00Z";
  writeFileSync(keysFile, JSON.stringify(file));
  process.env.MATRIX_UPSTREAM_CREDENTIAL = UPSTREAM_CREDENTIAL;

  const backend = await startProgrammableBackend();
  backend.behave((req) => backendAnswer(req.method, req.url, String(req.headers["x-request-id"])));
  const clock = { now: Date.now() };
  const now = () => clock.now;
  const worlds = new Map<World, Running>();
  const rows: Row[] = [];
  try {
    for (const testCase of CASES) {
      const world = testCase.world ?? "pass";
      let running = worlds.get(world);
      if (!running) {
        running = await startWorld(world, keysFile, backend, now);
        worlds.set(world, running);
      }
      clock.now =
        testCase.clock === "sunset"
          ? SUNSET_PASSED
          : testCase.clock === "brownout"
            ? IN_BROWNOUT
            : Date.now();
      const key =
        testCase.key === "unknown"
          ? "matrix_nobody_key_0000000000000000"
          : testCase.key && keys[testCase.key];
      const reference =
        running.proxyMode &&
        (await observe(
          testCase,
          key,
          running.proxyMode.url.replace(/\/v1$/, ""),
          "proxy",
          running.backend,
          running.proxyMode,
        ));
      const cells: Cell[] = [];
      for (const proxy of PROXIES) {
        const seen = await observe(
          testCase,
          key,
          running.origins[proxy],
          proxy,
          running.backend,
          running.decision,
        );
        cells.push({
          proxy,
          seen,
          differences: reference ? compare(reference, seen) : ["no proxy mode to compare"],
        });
      }
      rows.push({ case: testCase, reference, cells });
    }
  } finally {
    for (const running of worlds.values()) await running.close();
    await backend.close();
  }
  return rows;
}

async function startWorld(
  world: World,
  keysFile: string,
  sharedBackend: ProgrammableBackend,
  now: () => number,
): Promise<Running> {
  // A backend that answers after the deadline, or an address nothing listens on.
  const lateBackend = world === "backend-slow" ? await startProgrammableBackend() : undefined;
  lateBackend?.behave(() => ({ kind: "late", delayMs: LATE_BACKEND_MS, answer: jsonAnswer(200, "[]") }));
  const backend = lateBackend ?? sharedBackend;
  const upstreamUrl = world === "backend-down" ? `http://127.0.0.1:${await freePort()}/v1` : backend.url;
  const upstream = world === "backend-slow" ? { timeoutMs: SHORT_UPSTREAM_TIMEOUT_MS } : {};
  const auth: Record<string, unknown> = { keysFile };
  if (world === "strip") auth.upstreamAuthorization = "strip";
  if (world === "replace") {
    auth.upstreamAuthorization = "replace";
    auth.upstreamCredentialEnv = "MATRIX_UPSTREAM_CREDENTIAL";
  }
  const policiesConfig = {
    auth,
    cors: { allowedOrigins: [ORIGIN()] },
    lifecycle: { brownouts: [{ operation: "getPet", ...BROWNOUT }] },
  };
  const faulty = world === "down" || world === "slow" || world === "500";
  const proxyMode = faulty
    ? undefined
    : await startGateway({ upstreamUrl, config: { upstream, policies: policiesConfig }, now });
  // The proxies' configs take the backend's timeouts from the same config.
  const decisionConfig = { mode: "decision", upstream, policies: policiesConfig };
  const decision = faulty ? undefined : await startGateway({ upstreamUrl: "", config: decisionConfig, now });
  const stub = faulty ? await startStub(world) : undefined;
  const decisionUrl = decision?.origin ?? stub?.origin ?? "";
  const contract = await contractOf(
    validateConfig({ port: 0, opsPort: 0, ...decisionConfig }, policies),
    policies,
  );
  const port = await freePort();
  const addresses = {
    decisionUrl,
    upstreamUrl,
    listenPort: port,
    timeoutMs: DECISION_TIMEOUT_MS,
    luaFile: HAPROXY_LUA,
  };
  const nginx = await startNginx(nginxConfig(contract, addresses), port);
  const envoy = await startEnvoyHarness(envoyConfig(contract, addresses));
  const caddyPort = await freePort();
  const caddy = await startCaddy(caddyConfig(contract, { ...addresses, listenPort: caddyPort }), caddyPort);
  const haproxyPort = await freePort();
  const haproxy = await startHaproxy(
    haproxyConfig(contract, { ...addresses, listenPort: haproxyPort }),
    haproxyPort,
  );
  const traefik = await startTraefikHarness(traefikConfig(contract, addresses), {
    timeoutMs: DECISION_TIMEOUT_MS,
  });
  return {
    backend,
    proxyMode,
    decision,
    origins: {
      nginx: nginx.origin,
      envoy: envoy.origin,
      caddy: caddy.origin,
      traefik: traefik.origin,
      haproxy: haproxy.origin,
    },
    async close() {
      await nginx.stop();
      await envoy.close();
      await caddy.stop();
      await haproxy.stop();
      await traefik.close();
      await proxyMode?.close();
      await decision?.close();
      await stub?.close();
      await lateBackend?.close();
    },
  };
}

/** A decision service that is down (nothing listens), hangs, or answers 500. */
async function startStub(world: World): Promise<{ origin: string; close(): Promise<void> }> {
  if (world === "down") {
    return { origin: `http://127.0.0.1:${await freePort()}`, close: async () => {} };
  }
  const server: Server = createServer((_req, res) => {
    if (world === "500") res.writeHead(500, { "content-type": "text/plain" }).end("boom");
    // "slow": never answers; closed with the world.
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

/** What the recording backend answers any POST with, a body proxy mode refuses included. */
const BACKEND_CREATED = 201;

function backendAnswer(method: string, url: string, requestId: string) {
  const json = (status: number, body: string) => ({
    kind: "respond" as const,
    status,
    headers: { "content-type": "application/json" },
    body,
  });
  // observe's request id names the case: matrix-backend-503-<proxy>-<n>.
  const ownFault = /^matrix-backend-(5\d\d)-/.exec(requestId);
  if (ownFault) return json(Number(ownFault[1]), '{"detail":"the backend\'s own"}');
  if (method === "POST") return json(BACKEND_CREATED, '{"id":1,"name":"Rex","categoryId":1}');
  if (/\/pets\/\d+/.test(url)) return json(200, '{"id":7,"name":"Rex","categoryId":1}');
  return json(200, "[]");
}

let sequence = 0;

async function observe(
  testCase: Case,
  key: string | undefined,
  origin: string,
  proxy: string,
  backend: ProgrammableBackend,
  gateway: TestGateway | undefined,
): Promise<Seen> {
  const requestId = `matrix-${testCase.name}-${proxy}-${++sequence}`;
  const headers: Record<string, string> = { "x-request-id": requestId, ...testCase.headers };
  if (testCase.body !== undefined && headers["content-type"] === undefined)
    headers["content-type"] = "application/json";
  const answer = await request(`${origin}${testCase.path}`, {
    method: testCase.method ?? "GET",
    headers,
    ...(key === undefined ? {} : { key }),
    ...(testCase.body === undefined ? {} : { body: testCase.body }),
  }).catch((error: Error) => ({
    status: 0,
    headers: {} as Record<string, string | string[] | undefined>,
    body: `no answer: ${error.message}`,
  }));
  const received = backend.requests.find((r) => r.headers["x-request-id"] === requestId);
  const lines = gateway?.logs.lines.filter((line) => line.reqId === requestId) ?? [];
  const shown: Record<string, string> = {};
  for (const name of COMPARED_HEADERS) {
    const value = answer.headers[name];
    if (value !== undefined) shown[name] = Array.isArray(value) ? value.join(", ") : String(value);
  }
  return {
    status: answer.status,
    body: answer.body,
    headers: shown,
    backend: received && {
      method: received.method,
      url: received.url,
      consumer: String(received.headers["x-consumer"] ?? ""),
      authorization: String(received.headers.authorization ?? ""),
    },
    accessLines: lines.filter((line) => line.msg === "request").length,
    deprecatedLines: lines.filter((line) => line.msg === DEPRECATED_CALL_MSG).length,
  };
}

/** Each way a proxy's view differs from proxy mode's, in words (the request id aside: it is per run). */
function compare(reference: Seen, seen: Seen): string[] {
  const differences: string[] = [];
  if (reference.status !== seen.status)
    differences.push(`status ${seen.status} instead of ${reference.status}`);
  if (reference.body !== seen.body) differences.push("body differs");
  for (const name of COMPARED_HEADERS) {
    if (name === "x-request-id") {
      if ((reference.headers[name] === undefined) !== (seen.headers[name] === undefined))
        differences.push("x-request-id presence differs");
      continue;
    }
    if (reference.headers[name] !== seen.headers[name]) {
      differences.push(
        `${name}: ${seen.headers[name] ?? "(none)"} instead of ${reference.headers[name] ?? "(none)"}`,
      );
    }
  }
  const a = reference.backend;
  const b = seen.backend;
  if ((a === undefined) !== (b === undefined))
    differences.push(b ? "reached the backend" : "never reached the backend");
  else if (a && b) {
    for (const field of ["method", "url", "consumer", "authorization"] as const) {
      if (a[field] !== b[field]) differences.push(`backend ${field}: ${b[field]} instead of ${a[field]}`);
    }
  }
  if (reference.accessLines !== seen.accessLines)
    differences.push(`${seen.accessLines} access lines instead of ${reference.accessLines}`);
  if (reference.deprecatedLines !== seen.deprecatedLines) {
    differences.push(`${seen.deprecatedLines} deprecated-call lines instead of ${reference.deprecatedLines}`);
  }
  return differences;
}

/** The capability table, from the rows: the committed page must be exactly this. */
export function capabilityPage(rows: readonly Row[]): string {
  const cell = (row: Row, proxy: Proxy) => {
    const found = row.cells.find((c) => c.proxy === proxy);
    const stated = statedFor(proxy, row);
    const mark = SIMULATED.has(proxy) ? " (simulated)" : "";
    if (found && found.differences.length === 0) return `same${mark}`;
    return `**${stated?.text ?? "differs"}**${mark}`;
  };
  const identical = (proxy: Proxy) =>
    rows.filter((row) => row.cells.find((c) => c.proxy === proxy)?.differences.length === 0).length;
  const lines = [
    "<!-- Generated by `node scripts/plugin-mode-capabilities.ts` from the plugin-mode matrix's results; test/slow/plugin-mode-matrix.test.ts fails when it drifts. -->",
    "# Plugin mode: what each proxy carries",
    "",
    "Each case of the matrix (test/slow/plugin-mode-matrix.test.ts) is sent to the gateway in proxy mode, and to each",
    "proxy in front of the gateway in decision mode with the config `npm run proxy-config` generates, all before one",
    "recording backend. **same**: the client saw the same status, Error body and headers, the backend received the same",
    "method, path, query, consumer and Authorization, and the gateway wrote the same access and deprecated-call lines.",
    "Every other cell says what differs and why. nginx, Caddy and HAProxy are Debian's, run for real; Envoy's and",
    "Traefik's cells come from harnesses that act on the generated config as Envoy's HTTP ext_authz client and Traefik's",
    "forwardAuth do (**simulated**): those configs are not claimed to be tested against a running Envoy or Traefik.",
    "",
    `${rows.length} cases × ${PROXIES.length} proxies: ${PROXIES.map((proxy) => `${proxy} ${identical(proxy)} same, ${rows.length - identical(proxy)} stated`).join("; ")}.`,
    "",
    `| case | proxy mode | ${PROXIES.map((proxy) => PROXY_CAPABILITIES[proxy].title).join(" | ")} |`,
    `|---|---|${PROXIES.map(() => "---").join("|")}|`,
  ];
  for (const row of rows) {
    const reference = row.reference ? String(row.reference.status) : "—";
    lines.push(
      `| ${row.case.what} | ${reference} | ${PROXIES.map((proxy) => cell(row, proxy)).join(" | ")} |`,
    );
  }
  lines.push("");
  return lines.join("\n");
}

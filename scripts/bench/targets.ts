// The targets the load is sent to: the bare proxy in its three forms, the gateway as `npm start`
// runs it (or as an older commit ran it), nginx, and the backend they all stand in front of.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { digestOf } from "../../policies/auth/key-file.ts";
import { buildForStart, GATEWAY_ENTRY, GATEWAY_NODE_FLAGS } from "../start-command.ts";
import { type Baseline, type Bench, ROOT } from "./context.ts";
import { freePort, startNode, stop, track, waitFor } from "./processes.ts";

export interface Target {
  readonly name: string;
  readonly origin: string;
  /** The processes whose CPU time is the target's cost (the backend's is not counted). */
  pids(): number[];
  /** For a target of several parties (nginx and its decision service): each one's processes. */
  parts?(): Record<string, number[]>;
  /**
   * Keys the load sends in turn, for a target that reads the key file (the gateway, the fastify
   * peer); unset, every request carries KEY. bare-must and must-undici keep one digest by design
   * (bare-proxy.ts is frozen) and hash every key presented, so they have nothing to cache on it.
   */
  readonly keys?: readonly string[];
}

/** The one key the load carries. */
export const KEY = `bench_${randomBytes(24).toString("base64url")}`;

/** The keys the load spreads over (issue 29: at least 1,000): KEY and the key file's others. */
export const LOAD_KEYS = 1000;
export const KEYS: readonly string[] = [
  KEY,
  ...Array.from({ length: LOAD_KEYS - 1 }, (_, i) => `other-${i + 1}`),
];

export function writeKeys(file: string, count: number): void {
  const entries = [{ consumer: "bench", sha256: digestOf(KEY) }];
  for (let i = 1; i < count; i++)
    entries.push({ consumer: `consumer-${i % 1000}`, sha256: digestOf(`other-${i}`) });
  writeFileSync(file, JSON.stringify({ keys: entries }));
}

/** The bare proxy (scripts/bench/bare-proxy.ts) as each of the three baselines runs it. */
export function bareProxyArgs(kind: Baseline, backendOrigin: string): string[] {
  const args = ["scripts/bench/bare-proxy.ts", "--target", backendOrigin];
  if (kind === "bare-check") args.push("--check");
  if (kind === "bare-must") args.push("--must-do", "--key-sha256", digestOf(KEY));
  return args;
}

/** The same proxy on undici (scripts/bench/undici-proxy.ts): `bare-undici`, or `must-undici` doing bare-must's work. */
export function undiciProxyArgs(kind: "bare-undici" | "must-undici", backendOrigin: string): string[] {
  const args = ["scripts/bench/undici-proxy.ts", "--target", backendOrigin];
  if (kind === "must-undici") args.push("--must-do", "--key-sha256", digestOf(KEY));
  return args;
}

/** The fastify peer (scripts/bench/fastify-peer.ts), with the gateway's key file. */
export async function startFastify(
  backendOrigin: string,
  keysFile: string,
): Promise<Target & { child: ChildProcess }> {
  const { child, url } = await startNode("fastify", [
    "scripts/bench/fastify-peer.ts",
    "--target",
    backendOrigin,
    "--keys-file",
    keysFile,
  ]);
  const pid = child.pid as number;
  return { name: "fastify", origin: url, pids: () => [pid], child };
}

export async function startGateway(
  bench: Bench,
  name: string,
  upstreamUrl: string,
  keysFile: string,
  nodeFlags: readonly string[] = GATEWAY_NODE_FLAGS,
  root = ROOT,
  /** The contract's mode; "report-0.1": report mode judging a random tenth of the answers. */
  contract: "enforce" | "off" | "report-0.1" = "enforce",
  /** Another OpenAPI document than the bundled one (OPENAPI_FILE). */
  openapiFile?: string,
  /** More environment for the gateway (the OTEL_* variables of a tracing target). */
  env: Readonly<Record<string, string>> = {},
): Promise<Target & { child: ChildProcess; opsOrigin: string }> {
  // Every policy on: CORS with an allowed origin (the load carries no Origin, as server-to-server
  // calls do), auth from a key file, lifecycle, limit, request validation, and the response
  // contract in enforce mode. A tree from --compare gets the settings of the policies it has.
  const policies: Record<string, unknown> = {};
  // A policy is a file in older trees, a folder since issue 16.
  const has = (policy: string) =>
    existsSync(join(root, `policies/${policy}.ts`)) || existsSync(join(root, `policies/${policy}/index.ts`));
  if (has("cors")) policies.cors = { allowedOrigins: ["https://shop.example"] };
  if (has("response-contract"))
    policies.responseContract =
      contract === "report-0.1" ? { mode: "report", sample: 0.1 } : { mode: contract };
  return spawnGateway(bench, name, {
    nodeFlags,
    root,
    config: { policies },
    env: {
      UPSTREAM_URL: upstreamUrl,
      API_KEYS_FILE: keysFile,
      ...(openapiFile === undefined ? {} : { OPENAPI_FILE: openapiFile }),
      ...env,
    },
  });
}

/** The decision service's config: nginx-check's nginx is generated from it too, so both run one config. */
const DECISION_CONFIG = {
  mode: "decision",
  // The nginx in front, on loopback: its X-Forwarded-For names the client.
  server: { trustedProxies: ["127.0.0.1"] },
  policies: { cors: { allowedOrigins: ["https://shop.example"] } },
};

/**
 * The gateway in decision mode as `npm start` runs it (GATEWAY_MODE=decision), every policy on as
 * in startGateway, trusting the nginx in front of it on loopback; its access lines to /dev/null,
 * or to `logFile` for a scenario that reads them.
 */
export function startDecisionGateway(
  bench: Bench,
  name: string,
  keysFile: string,
  logFile?: string,
  env: Readonly<Record<string, string>> = {},
): Promise<Target & { child: ChildProcess; configFile: string; opsOrigin: string }> {
  return spawnGateway(bench, name, {
    nodeFlags: GATEWAY_NODE_FLAGS,
    root: ROOT,
    config: DECISION_CONFIG,
    env: { API_KEYS_FILE: keysFile, ...env },
    ...(logFile === undefined ? {} : { logFile }),
  });
}

async function spawnGateway(
  bench: Bench,
  name: string,
  how: {
    readonly nodeFlags: readonly string[];
    readonly root: string;
    /** Beside the bench's own settings (loopback, no drain). */
    readonly config: Record<string, unknown>;
    readonly env: Record<string, string>;
    /** Where stdout (the access lines) goes; /dev/null when unset. */
    readonly logFile?: string;
  },
): Promise<Target & { child: ChildProcess; configFile: string; opsOrigin: string }> {
  const [port, opsPort] = [await freePort(), await freePort()];
  const configFile = join(bench.work, `${name.replace(/[^\w.-]+/g, "_")}.json`);
  const { server, ...rest } = how.config as { server?: Record<string, unknown> };
  writeFileSync(
    configFile,
    JSON.stringify({
      host: "127.0.0.1",
      opsHost: "127.0.0.1",
      // Nothing to drain between runs; the profile is written as soon as SIGTERM arrives.
      server: { shutdownDrainMs: 0, ...server },
      ...rest,
    }),
  );
  // The access log at info through pino's asynchronous destination, to /dev/null ("ignore"): the
  // serialization is paid, the disk is not.
  const stdout = how.logFile === undefined ? "ignore" : openSync(how.logFile, "a");
  const child = track(
    spawn(process.execPath, [...how.nodeFlags, how.root === ROOT ? GATEWAY_ENTRY : entryOf(how.root)], {
      cwd: how.root,
      stdio: ["ignore", stdout, "pipe"],
      env: {
        // A tracing target says so itself: OTEL_* of the shell running the bench would trace them all.
        ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("OTEL_"))),
        GATEWAY_CONFIG: configFile,
        LOG_LEVEL: "info",
        WORKERS: "1",
        PORT: String(port),
        OPS_PORT: String(opsPort),
        ...how.env,
      },
    }),
    name,
  );
  if (typeof stdout === "number") closeSync(stdout);
  const opsOrigin = `http://127.0.0.1:${opsPort}`;
  await waitFor(`${opsOrigin}/readyz`);
  const pid = child.pid as number;
  return { name, origin: `http://127.0.0.1:${port}`, pids: () => [pid], child, configFile, opsOrigin };
}

/** The tree of a git ref, unpacked next to the benchmark's other files, sharing node_modules. */
export function checkout(bench: Bench, commit: string): { root: string; name: string } {
  const root = join(bench.work, `gateway-${commit}`);
  mkdirSync(root);
  execFileSync("sh", ["-c", `git archive ${commit} | tar -x -C "${root}"`], { cwd: ROOT });
  symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"));
  if (entryOf(root).startsWith("dist/")) buildForStart(root);
  return { root, name: `gateway@${commit}` };
}

/** The program an older tree's `npm start` runs: its "start" script's last word (src/main.ts before the build). */
function entryOf(root: string): string {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    scripts: { start: string };
  };
  return manifest.scripts.start.trim().split(/\s+/).at(-1) as string;
}

export async function startNginx(
  bench: Bench,
  backendOrigin: string,
): Promise<(Target & { stop(): Promise<void> }) | undefined> {
  if (!bench.nginxPath) return undefined;
  const prefix = nginxPrefix(bench, "nginx");
  const port = await freePort();
  const backend = new URL(backendOrigin);
  // One worker: the same single core a Node process gets. Upstream keep-alive like the agents.
  const config = `worker_processes 1;
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
http {
${nginxOwnSettings(prefix)}
  upstream backend { server ${backend.host}; keepalive 256; }
  server {
    listen 127.0.0.1:${port};
    keepalive_requests 1000000;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`;
  const nginx = await runNginx(bench, "nginx", prefix, config, [], `http://127.0.0.1:${port}/v1/pets/1`, 200);
  if (nginx === undefined) return undefined;
  return { name: "nginx", origin: `http://127.0.0.1:${port}`, pids: nginx.pids, stop: nginx.stop };
}

/** The decision service an nginx of a decision target asks, as the target starts it. */
export interface DecisionService {
  /** What the bench calls it in a CPU split: "decision service", "check". */
  readonly part: string;
  readonly url: string;
  readonly pids: () => number[];
  /** The config file the proxy config is generated from (GATEWAY_CONFIG). */
  readonly configFile: string;
  stop(): Promise<void>;
}

/**
 * Debian's nginx with the config `npm run proxy-config -- nginx` generates (scripts/proxy-config.ts,
 * run as the npm script runs it, on the key file and config the decision service reads), asking
 * `decision` before it forwards to the backend: nginx-decision (the gateway in decision mode) and
 * nginx-check (the least check, scripts/bench/nginx-check.ts). Its pids are nginx's master and
 * workers and the decision service's: the CPU a request costs the pair.
 */
export async function startNginxDecision(
  bench: Bench,
  name: string,
  backendUrl: string,
  keysFile: string,
  decision: DecisionService,
): Promise<(Target & { stop(): Promise<void> }) | undefined> {
  if (!bench.nginxPath) {
    await decision.stop();
    return undefined;
  }
  const port = await freePort();
  const generated = execFileSync(
    process.execPath,
    [
      "scripts/proxy-config.ts",
      "nginx",
      "--decision-url",
      decision.url,
      "--upstream-url",
      backendUrl,
      "--listen",
      String(port),
    ],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        API_KEYS_FILE: keysFile,
        GATEWAY_CONFIG: decision.configFile,
      },
    },
  ).toString();
  const prefix = nginxPrefix(bench, name);
  // The generated config's http block gets the bench's temp paths and no access log (as the
  // reference nginx); the globals go on the command line, the generated file says none.
  const config = generated.replace(/^http \{$/m, `http {\n${nginxOwnSettings(prefix)}`);
  const globals = `daemon off; pid ${prefix}/nginx.pid; error_log ${prefix}/error.log warn;`;
  // Asked without a key: the decision refuses, nginx's render call answers 401. The whole chain.
  const nginx = await runNginx(
    bench,
    name,
    prefix,
    config,
    ["-g", globals],
    `http://127.0.0.1:${port}/v1/pets`,
    401,
  );
  if (nginx === undefined) {
    await decision.stop();
    return undefined;
  }
  return {
    name,
    origin: `http://127.0.0.1:${port}`,
    pids: () => [...nginx.pids(), ...decision.pids()],
    parts: () => ({ nginx: nginx.pids(), [decision.part]: decision.pids() }),
    async stop() {
      await nginx.stop();
      await decision.stop();
    },
  };
}

/**
 * The least check, scripts/bench/nginx-check.ts, on the key file the load's keys are in; its
 * nginx config is generated from the decision service's config, as nginx-decision's is.
 */
export async function startNginxCheck(bench: Bench, keysFile: string): Promise<DecisionService> {
  const configFile = join(bench.work, "nginx-check-config.json");
  writeFileSync(configFile, JSON.stringify(DECISION_CONFIG));
  const { child, url } = await startNode("nginx check", [
    "scripts/bench/nginx-check.ts",
    "--keys-file",
    keysFile,
  ]);
  const pid = child.pid as number;
  return { part: "check", url, pids: () => [pid], configFile, stop: () => stop(child) };
}

/** The gateway in decision mode as the decision service of nginx-decision. */
export function decisionServiceOf(
  gateway: Target & { child: ChildProcess; configFile: string },
): DecisionService {
  return {
    part: "decision service",
    url: gateway.origin,
    pids: gateway.pids,
    configFile: gateway.configFile,
    stop: () => stop(gateway.child),
  };
}

function nginxPrefix(bench: Bench, name: string): string {
  const prefix = join(bench.work, name.replace(/[^\w.-]+/g, "_"));
  mkdirSync(prefix, { recursive: true });
  return prefix;
}

/** What the bench sets in an nginx's http block: temp paths in its prefix, no access log. */
function nginxOwnSettings(prefix: string): string {
  return [
    "  access_log off;",
    `  client_body_temp_path ${prefix}/body;`,
    `  proxy_temp_path ${prefix}/proxy;`,
    `  fastcgi_temp_path ${prefix}/fastcgi;`,
    `  uwsgi_temp_path ${prefix}/uwsgi;`,
    `  scgi_temp_path ${prefix}/scgi;`,
  ].join("\n");
}

/**
 * Runs nginx (master and workers, no daemon) on a config written in its prefix, until `probe`
 * answers `status`; undefined, saying so, when it does not start. Its pids are the master's and
 * its workers' (read from /proc at each call: a worker nginx replaced is counted).
 */
async function runNginx(
  bench: Bench,
  name: string,
  prefix: string,
  config: string,
  args: readonly string[],
  probe: string,
  status: number,
): Promise<{ pids(): number[]; stop(): Promise<void> } | undefined> {
  const file = join(prefix, "nginx.conf");
  writeFileSync(file, config);
  const child = track(
    spawn(bench.nginxPath as string, ["-p", prefix, "-c", file, "-e", join(prefix, "error.log"), ...args], {
      stdio: ["ignore", "ignore", "pipe"],
    }),
    name,
  );
  try {
    await waitFor(probe, status, 5000);
  } catch {
    process.stderr.write(`bench: ${name} did not start; continuing without it\n${readLog(prefix)}`);
    await stop(child, "SIGKILL");
    return undefined;
  }
  const master = child.pid as number;
  const workers = () => {
    try {
      return readFileSync(`/proc/${master}/task/${master}/children`, "utf8").trim().split(/\s+/).map(Number);
    } catch {
      return [];
    }
  };
  return { pids: () => [master, ...workers()], stop: () => stop(child, "SIGQUIT") };
}

function readLog(prefix: string): string {
  try {
    return readFileSync(join(prefix, "error.log"), "utf8").slice(-2000);
  } catch {
    return "";
  }
}

export async function startBackend(bench: Bench): Promise<{ child: ChildProcess; url: string }> {
  return bench.backend === "demo"
    ? startNode("demo backend", ["src/demo-backend-cli.ts", "--seed", "150"])
    : startNode("static backend", ["scripts/bench/static-backend.ts", "--seed", "150"]);
}

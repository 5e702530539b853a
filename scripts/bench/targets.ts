// The targets the load is sent to: the bare proxy in its three forms, the gateway as `npm start`
// runs it (or as an older commit ran it), nginx, and the backend they all stand in front of.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
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
): Promise<Target & { child: ChildProcess }> {
  const [port, opsPort] = [await freePort(), await freePort()];
  const configFile = join(bench.work, `${name.replace(/[^\w.-]+/g, "_")}.json`);
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
  writeFileSync(
    configFile,
    JSON.stringify({
      host: "127.0.0.1",
      opsHost: "127.0.0.1",
      // Nothing to drain between runs; the profile is written as soon as SIGTERM arrives.
      server: { shutdownDrainMs: 0 },
      policies,
    }),
  );
  // The access log at info through pino's asynchronous destination, to /dev/null ("ignore"): the
  // serialization is paid, the disk is not.
  const child = track(
    spawn(process.execPath, [...nodeFlags, root === ROOT ? GATEWAY_ENTRY : entryOf(root)], {
      cwd: root,
      stdio: ["ignore", "ignore", "pipe"],
      env: {
        ...process.env,
        GATEWAY_CONFIG: configFile,
        UPSTREAM_URL: upstreamUrl,
        API_KEYS_FILE: keysFile,
        LOG_LEVEL: "info",
        WORKERS: "1",
        PORT: String(port),
        OPS_PORT: String(opsPort),
        ...(openapiFile === undefined ? {} : { OPENAPI_FILE: openapiFile }),
      },
    }),
    name,
  );
  await waitFor(`http://127.0.0.1:${opsPort}/readyz`);
  const pid = child.pid as number;
  return { name, origin: `http://127.0.0.1:${port}`, pids: () => [pid], child };
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
  const nginxPath = bench.nginxPath;
  if (!nginxPath) return undefined;
  const prefix = join(bench.work, "nginx");
  mkdirSync(prefix, { recursive: true });
  const port = await freePort();
  const backend = new URL(backendOrigin);
  // One worker: the same single core a Node process gets. Upstream keep-alive like the agents.
  writeFileSync(
    join(prefix, "nginx.conf"),
    `worker_processes 1;
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${prefix}/body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
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
`,
  );
  const child = track(
    spawn(nginxPath, ["-p", prefix, "-c", join(prefix, "nginx.conf"), "-e", join(prefix, "error.log")], {
      stdio: ["ignore", "ignore", "pipe"],
    }),
    "nginx",
  );
  try {
    await waitFor(`http://127.0.0.1:${port}/v1/pets/1`, 200, 5000);
  } catch {
    process.stderr.write("bench: nginx did not start; continuing without it\n");
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
  return {
    name: "nginx",
    origin: `http://127.0.0.1:${port}`,
    pids: () => [master, ...workers()],
    stop: () => stop(child, "SIGQUIT"),
  };
}

export async function startBackend(bench: Bench): Promise<{ child: ChildProcess; url: string }> {
  return bench.backend === "demo"
    ? startNode("demo backend", ["src/demo-backend-cli.ts", "--seed", "150"])
    : startNode("static backend", ["scripts/bench/static-backend.ts", "--seed", "150"]);
}

// The load generators: wrk when installed (closed loop, a Lua script per request), else
// autocannon in a child process of its own (scripts/bench/load-worker.ts), which also drives
// every open-loop run at a fixed rate.
import { type ChildProcess, fork, spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Bench, ROOT } from "./context.ts";
import type { LoadOrder, LoadResult } from "./load-worker.ts";
import { expectExit, track } from "./processes.ts";
import { KEY } from "./targets.ts";

export interface RequestSpec {
  readonly operationId: string;
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly body?: string;
  readonly status: number;
}

export const REQUESTS = {
  list20: { operationId: "listPets", method: "GET", path: "/v1/pets", status: 200 },
  list100: { operationId: "listPets", method: "GET", path: "/v1/pets?limit=100", status: 200 },
  create: {
    operationId: "createPet",
    method: "POST",
    path: "/v1/pets",
    body: JSON.stringify({ name: "Rex", categoryId: 1, status: "available" }),
    status: 201,
  },
  getPet: { operationId: "getPet", method: "GET", path: "/v1/pets/1", status: 200 },
} as const satisfies Record<string, RequestSpec>;

const HEADERS: Record<string, string> = { authorization: `Bearer ${KEY}`, accept: "application/json" };
export const headersFor = (spec: RequestSpec) =>
  spec.body === undefined ? HEADERS : { ...HEADERS, "content-type": "application/json" };

let loadWorker: ChildProcess | undefined;
let nextOrder = 0;
const pendingOrders = new Map<number, { resolve(result: LoadResult): void; reject(error: Error): void }>();

export function autocannonRun(order: LoadOrder): Promise<LoadResult> {
  if (!loadWorker) {
    loadWorker = track(
      fork(join(ROOT, "scripts/bench/load-worker.ts"), [], { stdio: ["ignore", "inherit", "pipe", "ipc"] }),
      "load generator",
    );
    loadWorker.on("message", (message: { id: number; result?: LoadResult; error?: string }) => {
      const pending = pendingOrders.get(message.id);
      pendingOrders.delete(message.id);
      if (message.result) pending?.resolve(message.result);
      else pending?.reject(new Error(message.error));
    });
  }
  const id = nextOrder++;
  return new Promise((resolve, reject) => {
    pendingOrders.set(id, { resolve, reject });
    loadWorker?.send({ id, order });
  });
}

const luaScripts = new Map<string, string>();
function luaScript(bench: Bench, spec: RequestSpec, keys: readonly string[] | undefined): string {
  const id = `${spec.method} ${spec.path} ${keys?.length ?? 0}`;
  let file = luaScripts.get(id);
  if (file) return file;
  const lines = [`wrk.method = "${spec.method}"`];
  for (const [name, value] of Object.entries(headersFor(spec)))
    lines.push(`wrk.headers["${name}"] = "${value}"`);
  if (spec.body !== undefined) lines.push(`wrk.body = [[${spec.body}]]`);
  if (keys !== undefined) {
    // A key per request, in turn: the load spreads over every key, so that nothing can be cached
    // on a presented key.
    lines.push(
      `local keys = { ${keys.map((key) => `"${key}"`).join(", ")} }`,
      "local turn = 0",
      "request = function()",
      "  turn = turn % #keys + 1",
      '  wrk.headers["authorization"] = "Bearer " .. keys[turn]',
      "  return wrk.format()",
      "end",
    );
  }
  lines.push(
    "done = function(summary, latency, requests)",
    "  local e = summary.errors",
    '  io.write(string.format("BENCH_JSON {\\"requests\\":%d,\\"us\\":%d,\\"p50\\":%f,\\"p99\\":%f,\\"errors\\":%d,\\"non2xx\\":%d}\\n",',
    "    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),",
    "    e.connect + e.read + e.write + e.timeout, e.status))",
    "end",
  );
  file = join(bench.work, `wrk-${luaScripts.size}.lua`);
  writeFileSync(file, `${lines.join("\n")}\n`);
  luaScripts.set(id, file);
  return file;
}

export async function wrkRun(
  bench: Bench,
  url: string,
  spec: RequestSpec,
  connections: number,
  durationS: number,
  keys?: readonly string[],
): Promise<LoadResult> {
  const child = track(
    spawn(
      bench.wrkPath as string,
      [
        "-t1",
        `-c${connections}`,
        `-d${durationS}s`,
        "--timeout",
        "10s",
        "-s",
        luaScript(bench, spec, keys),
        url,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    ),
    "wrk",
  );
  expectExit(child);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  await once(child, "exit");
  const line = output.split("\n").find((l) => l.startsWith("BENCH_JSON "));
  if (!line) throw new Error(`wrk printed no result:\n${output}`);
  const raw = JSON.parse(line.slice("BENCH_JSON ".length)) as {
    requests: number;
    us: number;
    p50: number;
    p99: number;
    errors: number;
    non2xx: number;
  };
  const seconds = raw.us / 1e6;
  return {
    requests: raw.requests,
    seconds,
    rps: raw.requests / seconds,
    p50: raw.p50 / 1000,
    p99: raw.p99 / 1000,
    non2xx: raw.non2xx,
    errors: raw.errors,
  };
}

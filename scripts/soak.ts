// npm run soak [-- --requests 200000 --warmup 20000 --concurrency 32]
//
// Bounded memory, measured: a real gateway process (as `npm start` runs it) in front of a backend that
// fails on purpose, driven with a mix of valid and invalid requests, bad keys, unknown and
// non-canonical paths and upstream faults. It prints the gateway's resident memory and the number
// of /metrics series after the warm-up and at the end, checks that every request got an answer
// and an access log line, and exits non-zero if RSS grew by 20 MB or more or the series count
// moved. Loopback only; nothing is left running.
//
// npm run soak -- --hostile [--slices 10 --hostile-gap-ms 10 --non-reading-runs 5]
//
// Hostile input, measured: a canary client calls at a steady pace while, in every other
// one-second slice, two clients send requests built against the gateway's text handling
// (16 KB targets of "?key" pieces, "&token" pieces, runs one short of a key, an Authorization of
// spaces). The canary's p99 under attack must stay within 1.5x its own p99 in the quiet slices
// of the same run, and its worst latency under 100 ms. Then 30 clients that never read pipeline
// 32 requests each for ~1 MB answers, against a fresh gateway each run (5 runs): RSS before, at
// peak and after; the median growth must stay under 100 MB. Writes
// bench/results/soak-hostile-<time>.json and a short .md beside it; exits non-zero on a miss.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import net, { type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { digestOf } from "../policies/auth/key-file.ts";
import { median } from "./bench/stats.ts";
import { buildForStart, GATEWAY_ENTRY, GATEWAY_NODE_FLAGS } from "./start-command.ts";

const PROJECT_ROOT = resolve(import.meta.dirname, "..");
// The gateway as `npm start` runs it, built first as `npm start` builds it.
buildForStart(PROJECT_ROOT);
const { values: args } = parseArgs({
  options: {
    requests: { type: "string", default: "200000" },
    // V8 sizes its heap to the load it sees: RSS levels off after some tens of thousands of requests.
    warmup: { type: "string", default: "100000" },
    concurrency: { type: "string", default: "32" },
    "max-growth-mb": { type: "string", default: "20" },
    hostile: { type: "boolean", default: false },
    slices: { type: "string", default: "10" },
    "hostile-gap-ms": { type: "string", default: "10" },
    "non-reading-runs": { type: "string", default: "5" },
  },
});
const MEASURED = Number(args.requests);
const WARMUP = Number(args.warmup);
const CONCURRENCY = Number(args.concurrency);
const MAX_GROWTH_MB = Number(args["max-growth-mb"]);

// --- A backend that answers inside the contract, except where the pet id asks for a fault ------
const PET = { id: 1, name: "Rex", categoryId: 7, status: "available" };
const FAULTS = ["reset", "error", "hang", "bad-json", "cut", "slow"] as const;
// About 1 MB of pets that keep the contract, under the 1 MiB answer cap: an answer the gateway
// holds whole to judge it (asked for with X-Soak-Page: big).
const BIG_PAGE = JSON.stringify(
  Array.from({ length: 6500 }, (_, id) => ({
    id,
    name: "x".repeat(100),
    categoryId: 7,
    status: "available",
  })),
);
interface Backend {
  readonly url: string;
  /** Requests that reached the backend so far. */
  asked(): number;
  close(): Promise<void>;
}
function startBackend(): Promise<Backend> {
  let asked = 0;
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("error", () => {});
    req.on("end", () => {
      asked++;
      const url = new URL(req.url ?? "/", "http://backend");
      const json = (status: number, body: string) => {
        res.writeHead(status, {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
        });
        res.end(body);
      };
      if (req.headers["x-soak-page"] === "big") return json(200, BIG_PAGE);
      if (req.method === "POST")
        return json(201, `{"id":1,${Buffer.concat(chunks).toString("utf8").trim().slice(1)}`);
      const id = /^\/v1\/pets\/(\d+)$/.exec(url.pathname)?.[1];
      if (id === undefined) {
        return json(200, JSON.stringify([{ ...PET, status: url.searchParams.get("status") ?? PET.status }]));
      }
      // Ids ending in 01..06 fail, each in its own way; every other id is served.
      const fault = FAULTS[(Number(id.slice(-2)) || 99) - 1];
      if (fault === "reset") return req.socket.destroy();
      if (fault === "error") return json(500, '{"oops":true}');
      if (fault === "hang") return; // the gateway's deadline answers; the socket dies with it
      if (fault === "bad-json") return json(200, '{"id":');
      if (fault === "cut") {
        res.writeHead(200, { "content-type": "application/json", "content-length": "200" });
        return void res.write('{"id":1,', () => req.socket.destroy());
      }
      if (fault === "slow")
        return void setTimeout(() => json(200, JSON.stringify({ ...PET, id: Number(id) })), 50);
      json(200, JSON.stringify({ ...PET, id: Number(id) }));
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  return new Promise((ready) =>
    server.listen(0, "127.0.0.1", () =>
      ready({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        asked: () => asked,
        close: () => {
          for (const socket of sockets) socket.destroy();
          return new Promise((closed) => server.close(() => closed()));
        },
      }),
    ),
  );
}

// --- The gateway, as operators run it -------------------------------------------------------
interface Gateway {
  readonly child: ChildProcess;
  readonly port: number;
  readonly opsPort: number;
  accessLines(): number;
  stderr(): string;
}

/** The soak's gateway; its upstream deadline is short, for the backend's faults, unless `upstream` says otherwise. */
async function startGateway(
  upstreamUrl: string,
  dir: string,
  keys: readonly string[],
  upstream: Record<string, number> = { timeoutMs: 250, connectTimeoutMs: 500 },
): Promise<Gateway> {
  const keysFile = join(dir, "api-keys.json");
  writeFileSync(
    keysFile,
    JSON.stringify({ keys: keys.map((key, i) => ({ consumer: `soak${i}`, sha256: digestOf(key) })) }),
  );
  const configFile = join(dir, `gateway-${randomBytes(4).toString("hex")}.json`);
  writeFileSync(
    configFile,
    JSON.stringify({
      opsHost: "127.0.0.1",
      upstream,
      server: { shutdownDrainMs: 0, shutdownTimeoutMs: 5000 },
    }),
  );
  const child = spawn(process.execPath, [...GATEWAY_NODE_FLAGS, GATEWAY_ENTRY], {
    cwd: PROJECT_ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      PORT: "0",
      OPS_PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      WORKERS: "1",
      GATEWAY_CONFIG: configFile,
      UPSTREAM_URL: upstreamUrl,
      API_KEYS_FILE: keysFile,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  let accessLines = 0;
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const listening = new Promise<{ port: number; opsPort: number }>((ready, fail) => {
    lines.on("line", (line) => {
      if (line.includes('"msg":"request"')) accessLines++;
      else if (line.includes('"msg":"gateway listening"')) ready(JSON.parse(line));
    });
    child.once("exit", (code) => fail(new Error(`the gateway exited with ${code}: ${stderr}`)));
  });
  const { port, opsPort } = await listening;
  return { child, port, opsPort, accessLines: () => accessLines, stderr: () => stderr };
}

// --- The mix ------------------------------------------------------------------------------------
interface Shot {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

function mix(keys: readonly string[]): () => Shot {
  let n = 0;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)] as T;
  const auth = () => ({ authorization: `Bearer ${pick(keys)}` });
  const json = { "content-type": "application/json" };
  return () => {
    n++;
    const roll = n % 20;
    if (roll < 7) {
      const query = pick([
        "",
        "?limit=5",
        "?status=sold",
        "?limit=100&status=pending",
        "?limit=500",
        "?limit=0",
      ]);
      return { method: "GET", path: `/v1/pets${query}`, headers: auth() };
    }
    if (roll < 9) {
      const body = JSON.stringify({ name: `pet${n}`, categoryId: n, status: pick(["available", "sold"]) });
      return { method: "POST", path: "/v1/pets", headers: { ...auth(), ...json }, body };
    }
    // 1 in 4 of these ids asks the backend for one of its faults.
    if (roll < 11)
      return { method: "GET", path: `/v1/pets/${Math.floor(Math.random() * 400)}`, headers: auth() };
    if (roll === 11)
      return {
        method: "GET",
        path: pick([
          "/v1/pets?limit=x",
          "/v1/pets?colour=red",
          "/v1/pets?status=lost",
          "/v1/pets/abc",
          "/v1/pets?limit=1&limit=2",
        ]),
        headers: auth(),
      };
    if (roll === 12)
      return {
        method: "POST",
        path: "/v1/pets",
        headers: { ...auth(), ...json },
        body: pick([
          '{"name":1}',
          "{",
          '{"name":"a","categoryId":1,"__proto__":{}}',
          `[${"[".repeat(40)}${"]".repeat(40)}]`,
          '{"name":"a","categoryId":1e3}',
        ]),
      };
    if (roll === 13)
      return {
        method: "POST",
        path: "/v1/pets",
        headers: { ...auth(), "content-type": "text/plain" },
        body: "hello",
      };
    if (roll === 14) return { method: "GET", path: "/v1/pets", headers: {} };
    if (roll === 15)
      return {
        method: "GET",
        path: "/v1/pets",
        headers: { authorization: `Bearer ${randomBytes(12).toString("hex")}` },
      };
    // Unknown paths, fresh each time: the metrics must not grow a series per path.
    if (roll === 16)
      return { method: "GET", path: `/v1/${randomBytes(6).toString("hex")}/${n}`, headers: auth() };
    if (roll === 17)
      return {
        method: "GET",
        path: pick(["/v1/pets/../admin", "/v1//pets", "/v1/pets%2f1", "/v1/pets;x=1"]),
        headers: auth(),
      };
    if (roll === 18) return { method: pick(["DELETE", "PUT", "PATCH"]), path: "/v1/pets", headers: auth() };
    return { method: "GET", path: `/v1/pets/${1000 + (n % 97)}`, headers: auth() };
  };
}

interface Tally {
  sent: number;
  answered: number;
  lost: number;
  byStatus: Map<number, number>;
}

async function drive(port: number, count: number, next: () => Shot, tally: Tally): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  let issued = 0;
  const worker = async () => {
    while (issued < count) {
      issued++;
      const shot = next();
      tally.sent++;
      const status = await new Promise<number>((done) => {
        const req = http.request(
          { host: "127.0.0.1", port, method: shot.method, path: shot.path, headers: shot.headers, agent },
          (res) => {
            res.resume();
            res.on("end", () => done(res.statusCode ?? 0));
            res.on("error", () => done(-1)); // an answer cut on purpose (a fault mid-body) still counts
          },
        );
        req.on("error", () => done(0));
        req.setTimeout(10_000, () => req.destroy());
        req.end(shot.body);
      });
      if (status === 0) tally.lost++;
      else tally.answered++;
      tally.byStatus.set(status, (tally.byStatus.get(status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  agent.destroy();
}

// --- Measurements -------------------------------------------------------------------------------
function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb) / 1024;
}

async function scrape(opsPort: number): Promise<string> {
  return new Promise<string>((done, fail) => {
    http
      .get({ host: "127.0.0.1", port: opsPort, path: "/metrics" }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => done(body));
      })
      .on("error", fail);
  });
}

/**
 * The gateway's own series (its instruments), and all of them. Node's default metrics come and go
 * with the kinds of handles open at the moment of the scrape; the gateway's must stay put.
 */
async function seriesCount(opsPort: number): Promise<{ gateway: number; all: number }> {
  const samples = (await scrape(opsPort)).split("\n").filter((line) => line !== "" && !line.startsWith("#"));
  const own = samples.filter((line) => !line.startsWith("nodejs_") && !line.startsWith("process_"));
  return { gateway: own.length, all: samples.length };
}

/** The V8 heap in use and the memory outside it, as the gateway's own default metrics say. */
async function heapMb(opsPort: number): Promise<{ heap: number; external: number }> {
  const text = await scrape(opsPort);
  const value = (name: string) =>
    Number(new RegExp(`^${name} (\\S+)`, "m").exec(text)?.[1] ?? Number.NaN) / 2 ** 20;
  return { heap: value("nodejs_heap_size_used_bytes"), external: value("nodejs_external_memory_bytes") };
}

const round = (n: number) => Math.round(n * 10) / 10;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "gw-soak-"));
  const keys = Array.from({ length: 3 }, () => `soak_${randomBytes(24).toString("base64url")}`);
  const backend = await startBackend();
  const gateway = await startGateway(backend.url, dir, keys);
  const pid = gateway.child.pid as number;
  const next = mix(keys);
  const tally: Tally = { sent: 0, answered: 0, lost: 0, byStatus: new Map() };
  try {
    console.log(
      `soak: gateway pid ${pid}; warm-up ${WARMUP} requests, then ${MEASURED}, ${CONCURRENCY} at a time`,
    );
    await drive(gateway.port, WARMUP, next, tally);
    const warm = { rss: rssMb(pid), series: await seriesCount(gateway.opsPort) };
    console.log(
      `after warm-up:  RSS ${round(warm.rss)} MB, ${warm.series.gateway} gateway metric series (${warm.series.all} with Node's own)`,
    );
    let peak = warm.rss;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(pid));
    }, 1000);
    const measuredFrom = tally.sent;
    const measuredAt = performance.now();
    // In slices, printing the trend: a leak climbs slice after slice, a warm heap levels off.
    const slice = Math.max(1, Math.ceil(MEASURED / 10));
    for (let done = 0; done < MEASURED; done += slice) {
      await drive(gateway.port, Math.min(slice, MEASURED - done), next, tally);
      const { heap, external } = await heapMb(gateway.opsPort);
      console.log(
        `  ${String(tally.sent - measuredFrom).padStart(7)} requests: RSS ${round(rssMb(pid))} MB, V8 heap used ${round(heap)} MB, external ${round(external)} MB`,
      );
    }
    clearInterval(sampler);
    const seconds = (performance.now() - measuredAt) / 1000;
    const end = { rss: rssMb(pid), series: await seriesCount(gateway.opsPort) };
    peak = Math.max(peak, end.rss);
    console.log(
      `at the end:     RSS ${round(end.rss)} MB, ${end.series.gateway} gateway metric series (${end.series.all} with Node's own); peak RSS ${round(peak)} MB`,
    );
    // Every answered request has its access log line (give the asynchronous log a moment).
    for (let i = 0; i < 50 && gateway.accessLines() < tally.answered; i++)
      await new Promise((w) => setTimeout(w, 100));
    const growth = end.rss - warm.rss;
    const statuses = Object.fromEntries([...tally.byStatus].sort(([a], [b]) => a - b));
    console.log(
      `requests: ${tally.sent} (${tally.sent - measuredFrom} measured in ${round(seconds)} s, ${Math.round((tally.sent - measuredFrom) / seconds)}/s); answered ${tally.answered}; lost ${tally.lost}; access log lines ${gateway.accessLines()}`,
    );
    // -1: an answer cut in the middle, as the gateway must when the backend breaks off mid-body.
    console.log(`statuses: ${JSON.stringify(statuses)}`);
    console.log(
      `RSS growth after warm-up: ${round(growth)} MB (bound ${MAX_GROWTH_MB} MB); gateway series ${warm.series.gateway} -> ${end.series.gateway}`,
    );
    const alive = gateway.child.exitCode === null;
    const problems = [
      growth >= MAX_GROWTH_MB ? `RSS grew by ${round(growth)} MB` : "",
      end.series.gateway !== warm.series.gateway
        ? `the series count moved from ${warm.series.gateway} to ${end.series.gateway}`
        : "",
      tally.lost > 0 ? `${tally.lost} requests got no answer` : "",
      gateway.accessLines() < tally.answered
        ? `only ${gateway.accessLines()} access lines for ${tally.answered} answers`
        : "",
      alive ? "" : "the gateway died",
      gateway.stderr() === "" ? "" : `stderr: ${gateway.stderr().slice(0, 500)}`,
    ].filter((p) => p !== "");
    console.log(problems.length === 0 ? "soak: OK" : `soak: FAILED: ${problems.join("; ")}`);
    process.exitCode = problems.length === 0 ? 0 : 1;
  } finally {
    if (gateway.child.exitCode === null) {
      gateway.child.kill("SIGTERM");
      await once(gateway.child, "exit");
    }
    await backend.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// --- Hostile input ------------------------------------------------------------------------------
const HOSTILE_SHOTS: readonly (Shot & { readonly shape: string })[] = [
  { shape: "?key pieces", method: "GET", path: `/v1/pets${"?key".repeat(3_900)}`, headers: {} },
  { shape: "&token pieces", method: "GET", path: `/v1/pets?${"&token".repeat(2_600)}`, headers: {} },
  {
    shape: "runs one short of a key",
    method: "GET",
    path: `/v1/pets/${`${"a".repeat(23)}/`.repeat(650)}`,
    headers: {},
  },
  {
    shape: "Authorization of spaces",
    method: "GET",
    path: "/v1/pets",
    headers: { authorization: `bearer${" ".repeat(15_000)}x` },
  },
];
const CANARY_GAP_MS = 5;
const SLICE_MS = 1_000;
const P99_BOUND = 1.5;
const WORST_BOUND_MS = 100;
// The issue's goal for the growth of RSS under clients that never read. Bounded on the median of
// the runs: when glibc and V8 return memory varies from run to run (+70 to +105 MB measured on
// 2026-11-25), and every run's figure is written down.
const NON_READING_BOUND_MB = 100;

/** Milliseconds until the whole answer is in; Infinity when none came within 10 s. */
function timedShot(port: number, shot: Shot, agent: http.Agent): Promise<number> {
  const started = performance.now();
  return new Promise((done) => {
    const req = http.request(
      { host: "127.0.0.1", port, method: shot.method, path: shot.path, headers: shot.headers, agent },
      (res) => {
        res.resume();
        res.on("end", () => done(performance.now() - started));
        res.on("error", () => done(Number.POSITIVE_INFINITY));
      },
    );
    req.on("error", () => done(Number.POSITIVE_INFINITY));
    req.setTimeout(10_000, () => req.destroy());
    req.end(shot.body);
  });
}

/** Sends shots one after another, a gap between them, until stop() says so. */
function loop(port: number, next: () => Shot, gapMs: number, into: (ms: number, shot: Shot) => void) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let running = true;
  const done = (async () => {
    while (running) {
      const shot = next();
      into(await timedShot(port, shot, agent), shot);
      await new Promise((pause) => setTimeout(pause, gapMs));
    }
    agent.destroy();
  })();
  return {
    stop: () => {
      running = false;
      return done;
    },
  };
}

interface Figures {
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly worstMs: number;
}

function figures(samples: readonly number[]): Figures {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
  const ms = (n: number) => Math.round(n * 1000) / 1000;
  return {
    count: sorted.length,
    p50Ms: ms(at(0.5)),
    p99Ms: ms(at(0.99)),
    worstMs: ms(sorted.at(-1) ?? Number.NaN),
  };
}

const MB = 1024 * 1024;
const NON_READING_CONNECTIONS = 30;
const NON_READING_PIPELINED = 32;

/** Resident set of a process, from the kernel. */
function rssOf(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(line?.[1] ?? 0) * 1024;
}

/**
 * The non-reading clients against a fresh gateway each run, as test/slow/hardening-memory measures
 * them: one big answer read whole first, so that the baseline includes what serving at all costs.
 */
async function nonReadingRuns(runs: number, backend: Backend, dir: string, keys: readonly string[]) {
  const measured: Awaited<ReturnType<typeof nonReadingClients>>[] = [];
  // The same burst read by its clients, alternating with the runs that do not read: what serving
  // it costs at all, against which what the non-reading clients hold is seen.
  const reference: Awaited<ReturnType<typeof nonReadingClients>>[] = [];
  for (let run = 0; run < 2 * runs; run++) {
    const reading = run % 2 === 1;
    // The default upstream deadline: under the soak's 250 ms, a 1 MB answer from a backend busy
    // sending others can time out, and a 504 holds nothing (one run: 960 asked, +22 MB).
    const gateway = await startGateway(backend.url, dir, keys, {});
    try {
      const warm = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, {
        headers: { authorization: `Bearer ${keys[0]}`, "x-soak-page": "big" },
      });
      await warm.arrayBuffer();
      (reading ? reference : measured).push(
        await nonReadingClients(gateway, backend, keys[0] as string, reading),
      );
    } finally {
      gateway.child.kill("SIGKILL");
      await once(gateway.child, "exit");
    }
  }
  const growths = (of: typeof measured) => of.map((run) => run.rssGrowthMb);
  return {
    runs: measured,
    medianGrowthMb: median(growths(measured)),
    worstGrowthMb: Math.max(...growths(measured)),
    readingRuns: reference,
    readingMedianGrowthMb: median(growths(reference)),
  };
}

/**
 * Clients that never read: 30 connections each pipeline 32 requests for a ~1 MB answer and read
 * nothing, until the backend has been asked nothing more for a second (or 30 s). RSS before, at
 * its peak and 3 s after the clients left, as the kernel reports it (glibc decides when freed
 * memory goes back); the gateway must still answer afterwards.
 */
async function nonReadingClients(gateway: Gateway, backend: Backend, key: string, reading = false) {
  const pid = gateway.child.pid as number;
  const request = `GET /v1/pets HTTP/1.1\r\nHost: soak\r\nAuthorization: Bearer ${key}\r\nX-Soak-Page: big\r\n\r\n`;
  const pause = (ms: number) => new Promise((wake) => setTimeout(wake, ms));
  const rssBefore = rssOf(pid);
  const askedBefore = backend.asked();
  const sockets = Array.from({ length: NON_READING_CONNECTIONS }, () => {
    const socket = net.connect(gateway.port, "127.0.0.1");
    socket.on("error", () => {});
    if (reading) socket.resume();
    else socket.pause();
    socket.write(request.repeat(NON_READING_PIPELINED));
    return socket;
  });
  let peak = rssBefore;
  let asked = -1;
  const started = performance.now();
  while (performance.now() - started < 30_000) {
    for (let i = 0; i < 20; i++) {
      peak = Math.max(peak, rssOf(pid));
      await pause(50);
    }
    if (backend.asked() === asked) break;
    asked = backend.asked();
  }
  for (const socket of sockets) socket.destroy();
  await pause(3_000);
  const rssAfter = rssOf(pid);
  const probe = await fetch(`http://127.0.0.1:${gateway.opsPort}/healthz`).then(
    (answer) => answer.status,
    () => 0,
  );
  return {
    connections: NON_READING_CONNECTIONS,
    pipelined: NON_READING_PIPELINED,
    answerBytes: BIG_PAGE.length,
    backendAsked: backend.asked() - askedBefore,
    rssBeforeMb: Math.round(rssBefore / MB),
    rssPeakMb: Math.round(peak / MB),
    rssGrowthMb: Math.round((peak - rssBefore) / MB),
    rssAfterMb: Math.round(rssAfter / MB),
    healthzAfter: probe,
  };
}

async function hostileSoak(): Promise<void> {
  const slices = Number(args.slices);
  const hostileGapMs = Number(args["hostile-gap-ms"]);
  const dir = mkdtempSync(join(tmpdir(), "gw-soak-hostile-"));
  const keys = [`soak_${randomBytes(24).toString("base64url")}`];
  const backend = await startBackend();
  const gateway = await startGateway(backend.url, dir, keys);
  const startedAt = new Date();
  const canaryShot: Shot = {
    method: "GET",
    path: "/v1/pets/1000",
    headers: { authorization: `Bearer ${keys[0]}` },
  };
  const quiet: number[] = [];
  const underAttack: number[] = [];
  const hostile = new Map<string, number[]>();
  let attacking = false;
  try {
    console.log(
      `soak --hostile: gateway pid ${gateway.child.pid}; ${slices} quiet and ${slices} hostile slices of ${SLICE_MS} ms`,
    );
    // Warm-up: both kinds of request, measured by nobody.
    const warmCanary = loop(
      gateway.port,
      () => canaryShot,
      CANARY_GAP_MS,
      () => {},
    );
    let w = 0;
    const warmHostile = loop(
      gateway.port,
      () => HOSTILE_SHOTS[w++ % HOSTILE_SHOTS.length] as Shot,
      hostileGapMs,
      () => {},
    );
    await new Promise((pause) => setTimeout(pause, 2 * SLICE_MS));
    await Promise.all([warmCanary.stop(), warmHostile.stop()]);
    const canary = loop(
      gateway.port,
      () => canaryShot,
      CANARY_GAP_MS,
      (ms) => {
        (attacking ? underAttack : quiet).push(ms);
      },
    );
    // Quiet and hostile slices alternate, so that what else the machine does weighs on both alike.
    for (let slice = 0; slice < slices; slice++) {
      await new Promise((pause) => setTimeout(pause, SLICE_MS));
      attacking = true;
      const senders = [0, 1].map((offset) => {
        let n = offset;
        return loop(
          gateway.port,
          () => HOSTILE_SHOTS[n++ % HOSTILE_SHOTS.length] as Shot,
          hostileGapMs,
          (ms, shot) => {
            const shape = (shot as (typeof HOSTILE_SHOTS)[number]).shape;
            const samples = hostile.get(shape) ?? [];
            samples.push(ms);
            hostile.set(shape, samples);
          },
        );
      });
      await new Promise((pause) => setTimeout(pause, SLICE_MS));
      await Promise.all(senders.map((sender) => sender.stop()));
      attacking = false;
    }
    await canary.stop();
    const nonReading = await nonReadingRuns(Number(args["non-reading-runs"]), backend, dir, keys);
    const result = {
      quiet: figures(quiet),
      underAttack: figures(underAttack),
      hostile: Object.fromEntries([...hostile].map(([shape, samples]) => [shape, figures(samples)])),
      nonReading,
    };
    const p99Ratio = Math.round((result.underAttack.p99Ms / result.quiet.p99Ms) * 100) / 100;
    const problems = [
      p99Ratio > P99_BOUND
        ? `canary p99 under attack is x${p99Ratio} its quiet p99 (bound x${P99_BOUND})`
        : "",
      result.underAttack.worstMs >= WORST_BOUND_MS
        ? `canary worst ${result.underAttack.worstMs} ms under attack (bound ${WORST_BOUND_MS} ms)`
        : "",
      gateway.child.exitCode === null ? "" : "the gateway died",
      nonReading.runs.every((run) => run.healthzAfter === 200)
        ? ""
        : `/healthz answered ${nonReading.runs.map((run) => run.healthzAfter).join(", ")} after the non-reading clients`,
      // What is held is bounded by server.maxBufferedBytes (64 MiB); the rest is V8's heap after
      // validating the answers and the allocator's share.
      nonReading.medianGrowthMb < NON_READING_BOUND_MB
        ? ""
        : `non-reading clients grew RSS by a median ${nonReading.medianGrowthMb} MB (bound ${NON_READING_BOUND_MB} MB)`,
      gateway.stderr() === "" ? "" : `stderr: ${gateway.stderr().slice(0, 500)}`,
    ].filter((p) => p !== "");
    const stamp = startedAt
      .toISOString()
      .replaceAll(":", "-")
      .replace(/\.\d+Z$/, "Z");
    const resultsDir = join(PROJECT_ROOT, "bench", "results");
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `soak-hostile-${stamp}.json`);
    const record = {
      startedAt: startedAt.toISOString(),
      commit: gitCommit(),
      settings: {
        slices,
        sliceMs: SLICE_MS,
        canaryGapMs: CANARY_GAP_MS,
        hostileSenders: 2,
        hostileGapMs,
        nonReadingRuns: nonReading.runs.length,
      },
      bounds: { p99Ratio: P99_BOUND, worstMs: WORST_BOUND_MS, nonReadingGrowthMb: NON_READING_BOUND_MB },
      ...result,
      p99Ratio,
      ok: problems.length === 0,
      problems,
    };
    writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
    const row = (name: string, f: Figures) =>
      `| ${name} | ${f.count} | ${f.p50Ms} | ${f.p99Ms} | ${f.worstMs} |`;
    const summary = [
      `# soak --hostile, ${record.startedAt} (${record.commit ?? "no commit"})`,
      "",
      "| requests | count | p50 ms | p99 ms | worst ms |",
      "| --- | ---: | ---: | ---: | ---: |",
      row("canary, quiet slices", result.quiet),
      row("canary, hostile slices", result.underAttack),
      ...Object.entries(result.hostile).map(([shape, f]) => row(`hostile: ${shape}`, f)),
      "",
      `Canary p99 under attack: x${p99Ratio} its quiet p99 (bound x${P99_BOUND}); worst ${result.underAttack.worstMs} ms (bound ${WORST_BOUND_MS} ms).`,
      "",
      `Clients that never read (${NON_READING_CONNECTIONS} connections x ${NON_READING_PIPELINED} pipelined ${Math.round(BIG_PAGE.length / 1000)} kB answers), ` +
        `a fresh gateway each run: RSS growth at the peak median +${nonReading.medianGrowthMb} MB (bound ${NON_READING_BOUND_MB} MB), worst +${nonReading.worstGrowthMb} MB. ` +
        `The same burst read by its clients: median +${nonReading.readingMedianGrowthMb} MB.`,
      "",
      "| run | clients | backend asked | RSS before MB | peak MB | growth MB | 3 s after they left MB | /healthz after |",
      "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
      ...[...nonReading.runs, ...nonReading.readingRuns].map(
        (run, i) =>
          `| ${(i % nonReading.runs.length) + 1} | ${i < nonReading.runs.length ? "never read" : "read"} | ${run.backendAsked} | ${run.rssBeforeMb} | ${run.rssPeakMb} | +${run.rssGrowthMb} | ${run.rssAfterMb} | ${run.healthzAfter} |`,
      ),
      "",
      problems.length === 0 ? "Result: OK" : `Result: FAILED: ${problems.join("; ")}`,
      "",
    ].join("\n");
    writeFileSync(file.replace(/\.json$/, ".md"), summary);
    console.log(summary);
    console.log(`Results: ${relative(process.cwd(), file)}`);
    process.exitCode = problems.length === 0 ? 0 : 1;
  } finally {
    if (gateway.child.exitCode === null) {
      gateway.child.kill("SIGKILL");
      await once(gateway.child, "exit");
    }
    await backend.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function gitCommit(): string | undefined {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], {
      cwd: PROJECT_ROOT,
      stdio: ["ignore", "pipe", "ignore"],
    })
      .toString()
      .trim();
  } catch {
    return undefined;
  }
}

(args.hostile ? hostileSoak() : main()).catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

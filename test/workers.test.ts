import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import net, { type AddressInfo } from "node:net";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import policies from "../policies/index.ts";
import { nextRestart, workerCount } from "../src/cluster/primary.ts";
import { loadConfig } from "../src/config.ts";
import { eventually } from "./support/eventually.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { type Sample, sampleValue, scrape } from "./support/metrics.ts";
import { type GatewayProcess, startGatewayProcess } from "./support/processes.ts";
import { GATEWAY_PROGRAM, PROJECT_ROOT } from "./support/program.ts";

const accessLines = (gateway: GatewayProcess) => gateway.lines.filter((line) => line.msg === "request");
const served = (samples: readonly Sample[], status: string) =>
  sampleValue(samples, "http_server_request_duration_seconds_count", {
    operation: "listPets",
    http_response_status_code: status,
  });

/** Sends `count` requests, each on its own connection so the primary spreads them over the workers. */
async function sendEach(
  gateway: GatewayProcess,
  count: number,
  key: string | undefined,
  path = "/v1/pets",
): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i += 4) {
    const batch = Array.from({ length: Math.min(4, count - i) }, () =>
      request(`${gateway.origin}${path}`, key === undefined ? {} : { key }).then((answer) => answer.status),
    );
    statuses.push(...(await Promise.all(batch)));
  }
  return statuses;
}

/** The calls of the demo consumer to getPet, as the primary's merged /deprecations report counts them. */
async function deprecatedCallsReported(gateway: GatewayProcess): Promise<number> {
  const answer = await request(`${gateway.opsUrl}/deprecations`);
  assert.equal(answer.status, 200);
  const report = answer.json<{
    operations: { operation: string; calls: number; callers: { consumer: string; calls: number }[] }[];
  }>();
  const getPet = report.operations.find((operation) => operation.operation === "getPet");
  assert.equal(getPet?.callers.find((caller) => caller.consumer === "demo")?.calls, getPet?.calls);
  return getPet?.calls ?? 0;
}

describe("WORKERS=2: one port, two worker processes, one set of metrics", () => {
  let gateway: GatewayProcess;
  let key: string;
  let sentOk = 0;
  let sentUnauthorized = 0;
  let sentDeprecated = 0;
  before(async () => {
    // The demo: its backend runs once, in the primary, and both workers share its key file.
    gateway = await startGatewayProcess({ WORKERS: "2", GATEWAY_CONFIG: "" });
    key = gateway.demoKey as string;
    assert.ok(key, "the demo key is printed");
    await gateway.waitFor((line) => line.msg === "worker listening");
    const workers = gateway.lines.filter((line) => line.msg === "worker listening");
    if (workers.length < 2)
      await gateway.waitFor((line) => line.msg === "worker listening" && line !== workers[0]);
  });
  after(async () => {
    await gateway.stop("SIGKILL");
  });

  test("requests land on both workers and the scraped totals equal what was sent", async () => {
    const ok = await sendEach(gateway, 40, key);
    const refused = await sendEach(gateway, 6, undefined);
    assert.ok(ok.every((status) => status === 200));
    assert.ok(refused.every((status) => status === 401));
    sentOk += 40;
    sentUnauthorized += 6;
    const samples = await scrape(gateway);
    assert.equal(served(samples, "200"), sentOk);
    assert.equal(served(samples, "401"), sentUnauthorized);
    assert.equal(
      sampleValue(samples, "gateway_rejections_total", { operation: "listPets", reason: "auth" }),
      sentUnauthorized,
    );
    assert.equal(sampleValue(samples, "gateway_workers"), 2);
    // Every worker loads the one key file: the gauge is not summed over them.
    assert.equal(sampleValue(samples, "gateway_api_keys"), 1);
    assert.equal(sampleValue(samples, "nodejs_version_info") > 0, true);
    // The access lines say which process served: both did.
    await gateway.waitFor(() => accessLines(gateway).length >= sentOk + sentUnauthorized);
    const pids = new Set(accessLines(gateway).map((line) => line.pid));
    assert.equal(pids.size, 2);
    assert.equal((await request(`${gateway.opsUrl}/readyz`)).status, 200);
  });

  test("a policy's ops report covers every worker: /deprecations counts the calls both served", async () => {
    const statuses = await sendEach(gateway, 12, key, "/v1/pets/1");
    assert.ok(statuses.every((status) => status === 200));
    sentDeprecated += 12;
    assert.equal(await deprecatedCallsReported(gateway), sentDeprecated);
    await gateway.waitFor(
      () => gateway.lines.filter((line) => line.msg === "deprecated call").length >= sentDeprecated,
    );
    const servedBy = new Set(
      gateway.lines.filter((line) => line.msg === "deprecated call").map((line) => line.pid),
    );
    assert.equal(servedBy.size, 2);
  });

  test("a worker that dies is replaced, the gateway keeps answering and no total goes down", async () => {
    // SIGKILL loses what a worker still buffers: let every line served so far come out first.
    await gateway.waitFor(() => accessLines(gateway).length >= sentOk + sentUnauthorized + sentDeprecated);
    const before = await scrape(gateway);
    const known = new Set(
      gateway.lines.filter((line) => line.msg === "worker listening").map((l) => l.worker),
    );
    const victim = Number(accessLines(gateway).at(-1)?.pid);
    process.kill(victim, "SIGKILL");
    await gateway.waitFor(
      (line) => line.msg === "worker exited; starting a new one" && line.worker === victim,
    );
    // The other worker answers while the new one starts.
    const during = await sendEach(gateway, 8, key);
    assert.deepEqual(
      during.filter((status) => status !== 200),
      [],
    );
    sentOk += 8;
    const replacement = await gateway.waitFor(
      (line) => line.msg === "worker listening" && !known.has(line.worker),
    );
    const afterRestart = await sendEach(gateway, 12, key);
    assert.ok(afterRestart.every((status) => status === 200));
    sentOk += 12;
    const samples = await scrape(gateway);
    // What the dead worker had counted up to the last scrape is kept: nothing was lost since.
    assert.ok(served(samples, "200") >= served(before, "200"));
    assert.equal(served(samples, "200"), sentOk);
    assert.equal(served(samples, "401"), sentUnauthorized);
    assert.equal(sampleValue(samples, "gateway_worker_restarts_total"), 1);
    assert.equal(sampleValue(samples, "gateway_workers"), 2);
    // The report keeps the dead worker's callers too.
    assert.ok((await sendEach(gateway, 4, key, "/v1/pets/2")).every((status) => status === 200));
    sentDeprecated += 4;
    assert.equal(await deprecatedCallsReported(gateway), sentDeprecated);
    await gateway.waitFor(() => accessLines(gateway).length >= sentOk + sentUnauthorized + sentDeprecated);
    const servedBy = new Set(
      accessLines(gateway)
        .slice(-12)
        .map((line) => line.pid),
    );
    assert.ok(servedBy.has(replacement.worker), "the new worker serves");
  });

  test("SIGTERM drains the group: readiness goes, every worker stops, no access line is lost", async () => {
    const ok = await sendEach(gateway, 10, key);
    assert.ok(ok.every((status) => status === 200));
    sentOk += 10;
    gateway.child.kill("SIGTERM");
    await gateway.waitFor((line) => line.msg === "shutting down" && line.why === "SIGTERM");
    // Within the drain delay (3 s by default): still up, no longer ready.
    assert.equal((await request(`${gateway.opsUrl}/readyz`)).status, 503);
    assert.equal((await request(`${gateway.opsUrl}/healthz`)).status, 200);
    assert.equal(await gateway.exited, 0);
    const stopped = gateway.lines.filter((line) => line.msg === "stopped");
    assert.equal(stopped.length, 3, "two workers and the primary");
    const ids = new Set(accessLines(gateway).map((line) => line.reqId));
    // The worker killed outright lost nothing either: its lines were written as it served.
    assert.equal(ids.size, sentOk + sentUnauthorized + sentDeprecated);
    // And the fleet-wide record of deprecated calls is whole.
    const deprecated = gateway.lines.filter((line) => line.msg === "deprecated call");
    assert.equal(new Set(deprecated.map((line) => line.reqId)).size, sentDeprecated);
  });
});

test("when no worker can start (a busy port), the group stops with the error instead of looping", async () => {
  const busy = net.createServer().listen(0, "127.0.0.1");
  await once(busy, "listening");
  try {
    const port = (busy.address() as AddressInfo).port;
    const child = spawn(process.execPath, GATEWAY_PROGRAM, {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        PORT: String(port),
        HOST: "127.0.0.1",
        OPS_PORT: "0",
        WORKERS: "2",
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const [code] = await once(child, "exit");
    assert.equal(code, 1);
    assert.match(stderr, /^petstore-gateway: .*EADDRINUSE.*$/m);
  } finally {
    busy.close();
  }
});

test("only the workers probe an idle backend: the primary adds no connection of its own", async () => {
  // The probe only connects; each connection is one probe of one process.
  let connections = 0;
  const backend = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  backend.listen(0, "127.0.0.1");
  await once(backend, "listening");
  const dir = mkdtempSync(join(tmpdir(), "gw-probe-"));
  const configFile = join(dir, "gateway.json");
  writeFileSync(configFile, JSON.stringify({ upstream: { probeIntervalMs: 100 } }));
  const { file: keysFile } = writeKeysFile(["acme"], dir);
  const gateway = await startGatewayProcess({
    WORKERS: "2",
    GATEWAY_CONFIG: configFile,
    UPSTREAM_URL: `http://127.0.0.1:${(backend.address() as AddressInfo).port}/v1`,
    API_KEYS_FILE: keysFile,
  });
  try {
    await gateway.waitFor((line) => line.msg === "worker listening");
    await eventually("both workers listening", () =>
      gateway.lines.filter((line) => line.msg === "worker listening").length >= 2 ? true : undefined,
    );
    const before = connections;
    const startedAt = performance.now();
    await new Promise((wake) => setTimeout(wake, 1500));
    const probes = connections - before;
    const intervals = (performance.now() - startedAt) / 100;
    // Two probers make at most one connection each per interval; a third (the primary) would add
    // as many again. A busy machine delays timers, which only lowers the count.
    assert.ok(probes <= 2 * (intervals + 1), `${probes} probes in ${intervals.toFixed(1)} intervals`);
    assert.ok(probes >= 4, `the workers probe: ${probes} probes`);
  } finally {
    await gateway.stop("SIGKILL");
    backend.close();
  }
});

test("a worker that keeps dying young is restarted ever more slowly; one that lived a while at once", () => {
  let state = { streak: 0, delayMs: 0 };
  const delays: number[] = [];
  for (let i = 0; i < 10; i++) {
    state = nextRestart(state.streak, 50);
    delays.push(state.delayMs);
  }
  assert.deepEqual(delays, [100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 10_000]);
  assert.deepEqual(nextRestart(state.streak, 60_000), { streak: 0, delayMs: 0 });
});

test("WORKERS is a count or auto, one per core", () => {
  const env = { GATEWAY_CONFIG: "", UPSTREAM_URL: "http://127.0.0.1:9/v1" };
  assert.equal(workerCount(loadConfig({ policies, env: { ...env, WORKERS: "3" } }).workers), 3);
  assert.equal(
    workerCount(loadConfig({ policies, env: { ...env, WORKERS: "auto" } }).workers),
    availableParallelism(),
  );
  assert.equal(workerCount(loadConfig({ policies, env }).workers), 1);
  assert.throws(() => loadConfig({ policies, env: { ...env, WORKERS: "0" } }), /WORKERS/);
  assert.throws(() => loadConfig({ policies, env: { ...env, WORKERS: "many" } }), /WORKERS/);
});

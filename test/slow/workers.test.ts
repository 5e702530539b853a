// Many processes: a cluster primary and its workers, started as `npm start` runs them.
import assert from "node:assert/strict";
import { once } from "node:events";
import net, { type AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { eventually } from "../support/eventually.ts";
import { runGatewayProgram, startGatewayProgram } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { type Sample, sampleValue, scrape } from "../support/metrics.ts";
import type { GatewayProcess } from "../support/processes.ts";

const accessLines = (gateway: GatewayProcess) => gateway.lines.filter((line) => line.msg === "request");
/** The processes that wrote these lines. */
const pidsOf = (lines: readonly Record<string, unknown>[]) => new Set(lines.map((line) => line.pid));
const deprecatedLines = (gateway: GatewayProcess) =>
  gateway.lines.filter((line) => line.msg === "deprecated call");
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
  const calls = getPet?.calls ?? 0;
  // Every call is the demo consumer's (none yet: no caller listed).
  assert.equal(getPet?.callers.find((caller) => caller.consumer === "demo")?.calls ?? 0, calls);
  return calls;
}

/** The demo with WORKERS=2: its backend runs once, in the primary, and both workers share its key file. */
async function startTwoWorkers(): Promise<{ gateway: GatewayProcess; key: string }> {
  // The default config file: its drain (3 s) is what the SIGTERM test reads readiness within.
  const gateway = await startGatewayProgram({ keys: false, env: { WORKERS: "2", GATEWAY_CONFIG: "" } });
  const key = gateway.demoKey as string;
  assert.ok(key, "the demo key is printed");
  // Starting workers takes seconds on a busy machine: a loose bound, only against a hang.
  await eventually(
    "both workers listening",
    () => (gateway.lines.filter((line) => line.msg === "worker listening").length >= 2 ? true : undefined),
    20_000,
  );
  return { gateway, key };
}

describe("WORKERS=2: one port, two worker processes, one set of metrics", () => {
  // Each test counts what it sent against the totals before it, so that none depends on another.
  let gateway: GatewayProcess;
  let key: string;
  before(async () => {
    ({ gateway, key } = await startTwoWorkers());
  });
  after(async () => {
    await gateway.stop("SIGKILL");
  });

  test("requests land on both workers and the scraped totals grow by what was sent", async () => {
    const before = await scrape(gateway);
    const linesBefore = accessLines(gateway).length;
    const ok = await sendEach(gateway, 40, key);
    const refused = await sendEach(gateway, 6, undefined);
    assert.ok(ok.every((status) => status === 200));
    assert.ok(refused.every((status) => status === 401));
    const samples = await scrape(gateway);
    assert.equal(served(samples, "200") - served(before, "200"), 40);
    assert.equal(served(samples, "401") - served(before, "401"), 6);
    const authRejections = (of: readonly Sample[]) =>
      sampleValue(of, "gateway_rejections_total", { operation: "listPets", reason: "auth" });
    assert.equal(authRejections(samples) - authRejections(before), 6);
    assert.equal(sampleValue(samples, "gateway_workers"), 2);
    // Every worker loads the one key file: the gauge is not summed over them.
    assert.equal(sampleValue(samples, "gateway_api_keys"), 1);
    assert.equal(sampleValue(samples, "nodejs_version_info") > 0, true);
    // The access lines say which process served: both did.
    await gateway.waitFor(() => accessLines(gateway).length >= linesBefore + 46);
    const pids = pidsOf(accessLines(gateway).slice(linesBefore));
    assert.equal(pids.size, 2);
    assert.equal((await request(`${gateway.opsUrl}/readyz`)).status, 200);
  });

  test("a policy's ops report covers every worker: /deprecations counts the calls both served", async () => {
    const reportedBefore = await deprecatedCallsReported(gateway);
    const linesBefore = deprecatedLines(gateway).length;
    const statuses = await sendEach(gateway, 12, key, "/v1/pets/1");
    assert.ok(statuses.every((status) => status === 200));
    assert.equal(await deprecatedCallsReported(gateway), reportedBefore + 12);
    await gateway.waitFor(() => deprecatedLines(gateway).length >= linesBefore + 12);
    const servedBy = pidsOf(deprecatedLines(gateway).slice(linesBefore));
    assert.equal(servedBy.size, 2);
  });

  test("a worker that dies is replaced, the gateway keeps answering and no total goes down", async () => {
    // SIGKILL loses what a worker still buffers: let every line served so far come out first.
    const before = await scrape(gateway);
    const answered = before
      .filter((sample) => sample.name === "http_server_request_duration_seconds_count")
      .reduce((sum, sample) => sum + sample.value, 0);
    await gateway.waitFor(() => accessLines(gateway).length >= answered);
    const reportedBefore = await deprecatedCallsReported(gateway);
    const known = new Set(
      gateway.lines.filter((line) => line.msg === "worker listening").map((l) => l.worker),
    );
    const victim = Number([...known].at(-1));
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
    const replacement = await gateway.waitFor(
      (line) => line.msg === "worker listening" && !known.has(line.worker),
    );
    const afterRestart = await sendEach(gateway, 12, key);
    assert.ok(afterRestart.every((status) => status === 200));
    const samples = await scrape(gateway);
    // What the dead worker had counted up to the last scrape is kept: nothing was lost since.
    assert.equal(served(samples, "200") - served(before, "200"), 20);
    assert.equal(served(samples, "401"), served(before, "401"));
    const restarts = (of: readonly Sample[]) => sampleValue(of, "gateway_worker_restarts_total");
    assert.equal(restarts(samples) - restarts(before), 1);
    assert.equal(sampleValue(samples, "gateway_workers"), 2);
    // The report keeps the dead worker's callers too.
    assert.ok((await sendEach(gateway, 4, key, "/v1/pets/2")).every((status) => status === 200));
    assert.equal(await deprecatedCallsReported(gateway), reportedBefore + 4);
    const linesBefore = accessLines(gateway).length;
    const last = await sendEach(gateway, 12, key);
    assert.ok(last.every((status) => status === 200));
    await gateway.waitFor(() => accessLines(gateway).length >= linesBefore + 12);
    const servedBy = pidsOf(accessLines(gateway).slice(linesBefore));
    assert.ok(servedBy.has(replacement.worker), "the new worker serves");
  });
});

test("SIGTERM drains a group of two: readiness goes, every worker stops, no access line is lost", async () => {
  const { gateway, key } = await startTwoWorkers();
  try {
    assert.ok((await sendEach(gateway, 10, key)).every((status) => status === 200));
    assert.ok((await sendEach(gateway, 4, key, "/v1/pets/1")).every((status) => status === 200));
    gateway.child.kill("SIGTERM");
    await gateway.waitFor((line) => line.msg === "shutting down" && line.why === "SIGTERM");
    // Within the drain delay (3 s by default): still up, no longer ready.
    assert.equal((await request(`${gateway.opsUrl}/readyz`)).status, 503);
    assert.equal((await request(`${gateway.opsUrl}/healthz`)).status, 200);
    assert.equal(await gateway.exited, 0);
    const stopped = gateway.lines.filter((line) => line.msg === "stopped");
    assert.equal(stopped.length, 3, "two workers and the primary");
    assert.equal(new Set(accessLines(gateway).map((line) => line.reqId)).size, 14);
    // And the fleet-wide record of deprecated calls is whole.
    assert.equal(new Set(deprecatedLines(gateway).map((line) => line.reqId)).size, 4);
  } finally {
    if (gateway.child.exitCode === null) await gateway.stop("SIGKILL");
  }
});

test("when no worker can start (a busy port), the group stops with the error instead of looping", async () => {
  const busy = net.createServer().listen(0, "127.0.0.1");
  await once(busy, "listening");
  try {
    const port = (busy.address() as AddressInfo).port;
    const { code, stderr } = await runGatewayProgram({
      keys: false,
      env: { PORT: String(port), HOST: "127.0.0.1", WORKERS: "2", LOG_LEVEL: "warn" },
    });
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
  const gateway = await startGatewayProgram({
    upstreamUrl: `http://127.0.0.1:${(backend.address() as AddressInfo).port}/v1`,
    config: { upstream: { probeIntervalMs: 100 } },
    env: { WORKERS: "2" },
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

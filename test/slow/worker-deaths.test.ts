// Workers that die (SIGKILL, as the OOM killer or an operator does it) and a group shutdown that
// hits its deadline: every connection a client opens is answered or closed, the port stays open
// while the primary lives, /deprecations keeps what a dead worker counted, and the deadline exits 1
// with an access line for each request it cut.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { contractAnswer } from "../fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "../fixtures/programmable-backend.ts";
import { boundedConfig } from "../support/config-file.ts";
import { eventually } from "../support/eventually.ts";
import { startGatewayProgram } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import type { GatewayProcess } from "../support/processes.ts";
import { dribble, type RawOutcome, rawExchange } from "../support/raw-socket.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;
/** Past this a connection that got neither an answer nor a close is counted as left hanging. */
const HANGING_MS = 6000;
let backend: ProgrammableBackend;

before(async () => {
  backend = await startProgrammableBackend();
  backend.behave((req) => (req.url === "/v1/pets/6" ? { kind: "hang" } : contractAnswer(req)));
});
after(() => backend.close());

function startGroup(server: Record<string, number> = {}): Promise<GatewayProcess> {
  return startGatewayProgram({
    upstreamUrl: backend.url,
    keys,
    env: { HOST: "127.0.0.1", WORKERS: "2" },
    config: boundedConfig(
      Object.keys(server).length === 0
        ? {}
        : {
            server: {
              headersTimeoutMs: 1000,
              requestTimeoutMs: 2000,
              keepAliveTimeoutMs: 500,
              ...server,
            },
            upstream: { timeoutMs: 20_000 },
          },
    ),
  });
}

/** The pids of the workers listening now: each 'worker listening' not followed by its 'worker exited'. */
function liveWorkers(gateway: GatewayProcess): number[] {
  const live = new Set<number>();
  for (const line of gateway.lines) {
    if (line.msg === "worker listening") live.add(line.worker as number);
    if (line.msg === "worker exited; starting a new one") live.delete(line.worker as number);
  }
  return [...live];
}

const twoListening = (gateway: GatewayProcess) =>
  eventually("two workers listening", () => (liveWorkers(gateway).length === 2 ? true : undefined), 20_000);

const GET = `GET /v1/pets HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`;

type Fate = "answered" | "closed" | "refused" | "hanging";
function fateOf(outcome: RawOutcome): Fate {
  if (outcome.responses.length > 0) return "answered";
  if (outcome.error === "ECONNREFUSED") return "refused";
  return outcome.closed ? "closed" : "hanging";
}

function tally(fates: readonly Fate[]): Record<Fate, number> {
  const counts = { answered: 0, closed: 0, refused: 0, hanging: 0 };
  for (const fate of fates) counts[fate]++;
  return counts;
}

describe("WORKERS=2, a worker killed while connections arrive", () => {
  let gateway: GatewayProcess;
  before(async () => {
    gateway = await startGroup();
    await twoListening(gateway);
  });
  after(() => gateway.stop("SIGKILL"));

  test("every connection opened as the worker dies is answered or closed, none is left hanging", async (t) => {
    const RUNS = 8;
    const CONNECTIONS = 12;
    let runsWithHanging = 0;
    const all: Fate[] = [];
    for (let run = 0; run < RUNS; run++) {
      const [victim] = liveWorkers(gateway);
      process.kill(victim as number, "SIGKILL");
      // The primary learns of the death a moment later: meanwhile it still hands connections over.
      const fates = (
        await Promise.all(
          Array.from({ length: CONNECTIONS }, () => rawExchange(gateway.port, GET, { waitMs: HANGING_MS })),
        )
      ).map(fateOf);
      if (fates.includes("hanging")) runsWithHanging++;
      all.push(...fates);
      await gateway.waitFor(
        (line) => line.msg === "worker exited; starting a new one" && line.worker === victim,
      );
      await twoListening(gateway);
    }
    const counts = tally(all);
    t.diagnostic(
      `${runsWithHanging} of ${RUNS} runs left a connection hanging; ${RUNS * CONNECTIONS} connections: ${JSON.stringify(counts)}`,
    );
    assert.equal(counts.hanging, 0, "a connection got neither an answer nor a close");
    assert.equal(counts.refused, 0, "the port refused a connection");
    assert.ok(counts.answered >= RUNS * CONNECTIONS - RUNS, "the other worker answered");
  });

  test("with every worker killed, the port stays open: connections are answered 503 until a worker is back", async (t) => {
    const fates: Fate[] = [];
    const statuses: number[] = [];
    const victims = liveWorkers(gateway);
    for (const victim of victims) process.kill(victim, "SIGKILL");
    // Until both replacements listen (restarts back off when workers die young).
    const back = () => liveWorkers(gateway).filter((pid) => !victims.includes(pid)).length === 2;
    const startedAt = performance.now();
    while (!back() && performance.now() - startedAt < 20_000) {
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, () => rawExchange(gateway.port, GET, { waitMs: HANGING_MS })),
      );
      // Paced: a few hundred connections show it; thousands would only load the machine.
      await new Promise((pause) => setTimeout(pause, 25));
      for (const outcome of outcomes) {
        fates.push(fateOf(outcome));
        for (const response of outcome.responses) {
          statuses.push(response.status);
          if (response.status === 503) {
            assert.equal(response.headers.connection, "close");
            assert.equal(JSON.parse(response.body).code, "WORKER_UNAVAILABLE");
          }
        }
      }
    }
    const counts = tally(fates);
    t.diagnostic(
      `while no worker listened: ${JSON.stringify(counts)}; statuses ${JSON.stringify(tally503(statuses))}`,
    );
    assert.ok(back(), "both workers are back");
    assert.equal(counts.refused, 0, "the port refused a connection");
    assert.equal(counts.hanging, 0, "a connection got neither an answer nor a close");
    assert.ok(statuses.includes(503), "a connection arrived while no worker listened, and got 503");
    assert.ok(
      statuses.every((status) => status === 200 || status === 503),
      `statuses: ${statuses}`,
    );
    // The primary's own answers are in the access log, as any answer is.
    assert.ok(
      gateway.lines.some(
        (line) => line.msg === "request" && line.status === 503 && line.code === "WORKER_UNAVAILABLE",
      ),
    );
    assert.equal((await request(`${gateway.origin}/v1/pets`, { key })).status, 200);
  });

  test("a connection handed to a worker is held to the headers timeout, as one it accepted itself would be", async () => {
    // The bounded config: headers within 1 s. A client that never finishes them gets 408 and a close.
    const slow = dribble(gateway.port, 200);
    await eventually("the slow client closed", () => slow.closedAt !== undefined, 6000);
    assert.match(slow.received, /^HTTP\/1\.1 408 /);
    assert.ok((slow.closedAt as number) - slow.openedAt < 4000);
  });

  test("/deprecations keeps the calls a killed worker served, with no scrape before the kill", async () => {
    const countCalls = async () => {
      const answer = await request(`${gateway.opsUrl}/deprecations`);
      assert.equal(answer.status, 200);
      const report = answer.json<{ operations: { operation: string; calls: number }[] }>();
      return report.operations.find((operation) => operation.operation === "getPet")?.calls ?? 0;
    };
    const before = await countCalls();
    const CALLS = 16;
    // Each on its own connection: the primary spreads them over both workers.
    for (let i = 0; i < CALLS; i += 4) {
      const answers = await Promise.all(
        Array.from({ length: 4 }, () => request(`${gateway.origin}/v1/pets/1`, { key })),
      );
      assert.ok(answers.every((answer) => answer.status === 200));
    }
    const servedBy = new Set(
      gateway.lines
        .filter((line) => line.msg === "deprecated call")
        .slice(-CALLS)
        .map((line) => line.pid),
    );
    assert.equal(servedBy.size, 2, "both workers served deprecated calls");
    // What a worker counted reaches the primary within a second, unasked.
    await new Promise((done) => setTimeout(done, 1500));
    const victims = liveWorkers(gateway);
    for (const victim of victims) process.kill(victim, "SIGKILL");
    await eventually(
      "two new workers listening",
      () => (liveWorkers(gateway).filter((pid) => !victims.includes(pid)).length === 2 ? true : undefined),
      20_000,
    );
    assert.equal(await countCalls(), before + CALLS);
  });
});

function tally503(statuses: readonly number[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

describe("WORKERS=2, a shutdown that hits its deadline", () => {
  test("exits 1, and the request it cut has its access line", async () => {
    const gateway = await startGroup({ shutdownDrainMs: 200, shutdownTimeoutMs: 1500 });
    try {
      await twoListening(gateway);
      const seen = backend.requests.length;
      const hanging = rawExchange(gateway.port, GET.replace("/v1/pets", "/v1/pets/6"), { waitMs: 10_000 });
      await eventually("the hanging request at the backend", () => backend.requests.length > seen);
      gateway.child.kill("SIGTERM");
      assert.equal(await gateway.exited, 1);
      const outcome = await hanging;
      assert.notEqual(fateOf(outcome), "hanging");
      const line = gateway.lines.find((l) => l.msg === "request" && l.path === "/v1/pets/6");
      assert.ok(line, "the cut request has its access line");
      assert.equal(line.status, 503);
      assert.equal(line.code, "SHUTTING_DOWN");
      assert.equal(outcome.responses[0]?.status, 503);
    } finally {
      if (gateway.child.exitCode === null) await gateway.stop("SIGKILL");
    }
  });
});

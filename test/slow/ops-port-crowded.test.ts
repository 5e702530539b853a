// The ops port answers its probes whatever else is connected: clients holding every one of its
// connections (all from one address, as every peer is behind Docker's published port) must not
// get a replica's liveness probe failed, nor its scrape. Timed, so it runs alone.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { type ProgrammableBackend, startProgrammableBackend } from "../fixtures/programmable-backend.ts";
import { watchForCrashes } from "../support/crashes.ts";
import { eventually } from "../support/eventually.ts";
import { startGateway, type TestGateway } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { PROJECT_ROOT } from "../support/program.ts";

const keys = writeKeysFile(["acme"]);
/** The default cap, as a deployment has it. */
const MAX_OPS_CONNECTIONS = 64;
const PROBE_DEADLINE_MS = 1000;
const TRIES = 20;

interface Crowd {
  /** The last counts the crowd wrote. */
  readonly counts: { open: number; connects: number; answers: number };
  stop(): Promise<void>;
}

/** test/fixtures/ops-crowd.ts in its own process: clients whose work is not the gateway's loop's. */
function crowd(port: number, connections: number, everyMs: number, paths: readonly string[]): Crowd {
  const child = spawn(
    process.execPath,
    [
      join(PROJECT_ROOT, "test/fixtures/ops-crowd.ts"),
      String(port),
      String(connections),
      String(everyMs),
      ...paths,
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const counts = { open: 0, connects: 0, answers: 0 };
  createInterface({ input: child.stdout }).on("line", (line) => Object.assign(counts, JSON.parse(line)));
  const exited = once(child, "exit");
  return {
    counts,
    async stop() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A probe as the kubelet sends it: a fresh connection, an answer within the deadline or a failure. */
async function probe(url: string, took: number[]): Promise<string> {
  const started = performance.now();
  took.push(Number.POSITIVE_INFINITY);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<string>((resolve) => {
    timer = setTimeout(resolve, PROBE_DEADLINE_MS, `no answer within ${PROBE_DEADLINE_MS} ms`);
  });
  try {
    return await Promise.race([
      request(url, { headers: { connection: "close" } }).then(
        (answer) => {
          took[took.length - 1] = performance.now() - started;
          return answer.status === 200
            ? "ok"
            : `${answer.status} after ${Math.round(performance.now() - started)} ms`;
        },
        (error: Error) => `${error.message} after ${Math.round(performance.now() - started)} ms`,
      ),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe("the ops port with every connection held by others", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let hostile: Crowd;
  const crashes = watchForCrashes();
  before(async () => {
    backend = await startProgrammableBackend();
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { server: { maxOpsConnections: MAX_OPS_CONNECTIONS } },
    });
    // Four times the cap, each asking every second: each one idle is what a newcomer reclaims.
    hostile = crowd(Number(new URL(gw.opsUrl).port), 4 * MAX_OPS_CONNECTIONS, 1000, ["/healthz"]);
    await eventually(
      "the crowd holds the port",
      () => hostile.counts.open >= MAX_OPS_CONNECTIONS && hostile.counts.answers >= MAX_OPS_CONNECTIONS,
      10_000,
    );
  });
  after(async () => {
    await hostile.stop();
    await gw.close();
    await backend.close();
    crashes.stop();
    assert.deepEqual(crashes.crashes, []);
  });

  test(`fresh /healthz, /readyz and /metrics probes each answer 200 within ${PROBE_DEADLINE_MS} ms, ${TRIES} times of ${TRIES}`, {
    timeout: 120_000,
  }, async (t) => {
    const outcomes: Record<string, string[]> = { "/healthz": [], "/readyz": [], "/metrics": [] };
    const took: number[] = [];
    for (let i = 0; i < TRIES; i++) {
      for (const [path, seen] of Object.entries(outcomes))
        seen.push(await probe(`${gw.opsUrl}${path}`, took));
    }
    took.sort((a, b) => a - b);
    t.diagnostic(
      `probe answers: median ${took[took.length >> 1]?.toFixed(1)} ms, max ${took.at(-1)?.toFixed(1)} ms; the crowd connected ${hostile.counts.connects} times`,
    );
    for (const [path, seen] of Object.entries(outcomes)) {
      const failed = seen.filter((outcome) => outcome !== "ok");
      assert.deepEqual(failed, [], `${path}: ${TRIES - failed.length} of ${TRIES} answered`);
    }
  });
});

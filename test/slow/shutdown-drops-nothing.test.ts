// A graceful shutdown under keep-alive load drops no request of a client that behaves as a load
// balancer does: it stops opening connections once /readyz answers 503. A connection accepted a
// moment before the drain ends has its first request read and answered, not reset (Node 24 does
// not count a connection without a request yet as idle; this holds the gateway to that).
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { GATEWAY_NODE_FLAGS } from "../../scripts/start-command.ts";
import { startGatewayProgram } from "../support/gateway.ts";
import { writeKeysFile } from "../support/keys.ts";
import { type BackendProcess, type GatewayProcess, startDemoBackendProcess } from "../support/processes.ts";

const DRAIN_MS = 1500;
const directory = mkdtempSync(join(tmpdir(), "petstore-shutdown-"));
const config = { server: { shutdownDrainMs: DRAIN_MS, shutdownTimeoutMs: 15_000 } };
const keys = writeKeysFile(["acme"], directory);
const { key } = keys;
let backend: BackendProcess;

before(async () => {
  backend = await startDemoBackendProcess();
});
after(async () => {
  await backend.close();
  rmSync(directory, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

function startGatewayWith(workers: number): Promise<GatewayProcess> {
  return startGatewayProgram({ upstreamUrl: backend.url, keys, config, env: { WORKERS: String(workers) } });
}

interface Tally {
  ok: number;
  /** Set when SIGTERM is sent; okAfterSignal counts the 2xx answers from then on. */
  signalled: boolean;
  okAfterSignal: number;
  /** Answers that are not 2xx (reported, not failures of the shutdown). */
  refused: number;
  /** Resets, refusals, hang-ups: what must not happen. */
  readonly failures: string[];
}

/** One keep-alive client: GETs, or POSTs (a third of them), on one connection at a time. */
async function client(
  origin: string,
  posts: boolean,
  shouldStop: (agent: http.Agent) => boolean,
  tally: Tally,
): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    while (!shouldStop(agent)) {
      const body = posts ? JSON.stringify({ name: "Biscuit", categoryId: 7 }) : undefined;
      const outcome = await new Promise<number | Error>((resolve) => {
        const req = http.request(
          `${origin}/v1/pets`,
          {
            agent,
            method: posts ? "POST" : "GET",
            headers: {
              authorization: `Bearer ${key}`,
              ...(body ? { "content-type": "application/json" } : {}),
            },
          },
          (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode ?? 0));
            res.on("error", resolve);
          },
        );
        req.on("error", resolve);
        req.end(body);
      });
      if (outcome instanceof Error)
        tally.failures.push((outcome as NodeJS.ErrnoException).code ?? outcome.message);
      else if (outcome >= 200 && outcome < 300) {
        tally.ok++;
        if (tally.signalled) tally.okAfterSignal++;
      } else tally.refused++;
      // Let the agent put the socket back (or drop it after Connection: close) before deciding.
      await new Promise((done) => setImmediate(done));
    }
  } finally {
    agent.destroy();
  }
}

/** Whether the client's next request would reuse a kept-alive connection rather than open one. */
const hasOpenConnection = (agent: http.Agent) =>
  Object.values(agent.freeSockets).some((sockets) => (sockets?.length ?? 0) > 0);

for (const workers of [1, 2]) {
  describe(`SIGTERM under keep-alive load, WORKERS=${workers}`, () => {
    test("clients that stop opening connections once /readyz answers 503 see no failed request", async (t) => {
      const gateway = await startGatewayWith(workers);
      let notReady = false;
      let exited = false;
      const poller = (async () => {
        while (!notReady && !exited) {
          const status = await fetch(`${gateway.opsUrl}/readyz`).then(
            (res) => res.status,
            () => 503,
          );
          if (status === 503) notReady = true;
          else await sleep(100);
        }
      })();
      void gateway.exited.then(() => {
        exited = true;
      });
      const tally = (): Tally => ({ ok: 0, signalled: false, okAfterSignal: 0, refused: 0, failures: [] });
      const polite = tally();
      const stubborn = tally();
      const clients = [
        // 16 that behave as a load balancer does: no new connection once the replica is not ready.
        ...Array.from({ length: 16 }, (_, i) =>
          client(
            gateway.origin,
            i % 3 === 0,
            (agent) => exited || (notReady && !hasOpenConnection(agent)),
            polite,
          ),
        ),
        // 4 that never stop until the process is gone: reported, not asserted.
        ...Array.from({ length: 4 }, (_, i) => client(gateway.origin, i % 3 === 0, () => exited, stubborn)),
      ];
      await sleep(1000);
      polite.signalled = true;
      stubborn.signalled = true;
      gateway.child.kill("SIGTERM");
      const code = await gateway.exited;
      await Promise.all([poller, ...clients]);
      t.diagnostic(
        `polite clients: ${polite.ok} answered (${polite.okAfterSignal} after SIGTERM), ${polite.refused} refused, ${polite.failures.length} failed (${[...new Set(polite.failures)].join(", ")}); ` +
          `clients that never stop: ${stubborn.ok} answered, ${stubborn.failures.length} failed (${[...new Set(stubborn.failures)].join(", ") || "none"})`,
      );
      assert.equal(code, 0);
      assert.ok(polite.ok >= 16, `the clients were busy (${polite.ok} answers)`);
      // The drain served them: requests kept coming, and being answered, after the signal.
      assert.ok(polite.okAfterSignal >= 1, `answered during the drain: ${polite.okAfterSignal}`);
      assert.deepEqual(polite.failures, [], "no reset, refusal or hang-up");
    });
  });
}

describe("a connection accepted just before the drain ends", () => {
  test("has its first request read and answered with Connection: close, not reset", async () => {
    const gateway = await startGatewayWith(1);
    gateway.child.kill("SIGTERM");
    await sleep(DRAIN_MS - 400);
    // Accepted while the port still listens; its request comes after the drain has ended.
    const socket = net.connect(gateway.port, "127.0.0.1");
    await once(socket, "connect");
    let text = "";
    let closed = false;
    socket.setEncoding("latin1");
    socket.on("data", (data: string) => {
      text += data;
    });
    socket.on("close", () => {
      closed = true;
    });
    socket.on("error", () => {});
    await sleep(900);
    assert.equal(closed, false, "the connection was not closed at the end of the drain");
    socket.write(`GET /v1/pets HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    await once(socket, "close");
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.match(text, /\r\nconnection: close\r\n/i);
    assert.equal(await gateway.exited, 0);
  });
});

describe("a connection the kernel accepted while the process was stalled at the end of the drain", () => {
  test("is answered with Connection: close once the process resumes, not reset", async () => {
    // Stalled from 500 ms before the drain ends to 2,500 ms after: the drain's timer and this
    // connection are both pending when the event loop comes back, whenever the test gets to it
    // (it has the 3 s of the stall to read the line and connect, on a loaded machine too).
    const gateway = await startGatewayProgram({
      upstreamUrl: backend.url,
      keys,
      config,
      env: { STALL_AT_MS: String(DRAIN_MS - 500), STALL_MS: "3000" },
      program: [...GATEWAY_NODE_FLAGS, "test/fixtures/stalling-gateway.ts"],
    });
    gateway.child.kill("SIGTERM");
    await gateway.waitFor((line) => line.msg === "stalling");
    const socket = net.connect(gateway.port, "127.0.0.1");
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (data: string) => {
      text += data;
    });
    const failed = new Promise<string>((resolve) =>
      socket.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message)),
    );
    await once(socket, "connect");
    socket.write(`GET /v1/pets HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    const outcome = await Promise.race([once(socket, "close").then(() => "closed"), failed]);
    assert.equal(outcome, "closed", "the connection was not reset");
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.match(text, /\r\nconnection: close\r\n/i);
    assert.equal(await gateway.exited, 0);
  });
});

describe("SIGTERM as the first worker listens, while the second is still starting", () => {
  test("stops the whole group within the drain, exit 0, the starting worker included", async () => {
    const gateway = await startGatewayWith(2);
    // startGatewayWith resolves on "gateway listening", logged as the first worker listens and
    // the second is forked: this signal reaches the primary before the second can listen.
    const signalledAt = performance.now();
    gateway.child.kill("SIGTERM");
    const listeningBefore = gateway.lines.filter((line) => line.msg === "worker listening").length;
    assert.equal(await gateway.exited, 0);
    const tookMs = (await gateway.exitedAt) - signalledAt;
    assert.ok(tookMs < DRAIN_MS + 5000, `stopped ${Math.round(tookMs)} ms after the signal`);
    assert.equal(listeningBefore, 1, "the second worker was still starting when the signal came");
  });
});

describe("the same signal twice", () => {
  test("within a second is one shutdown; the process still drains and exits 0", async () => {
    const gateway = await startGatewayWith(1);
    gateway.child.kill("SIGTERM");
    await sleep(200);
    gateway.child.kill("SIGTERM");
    assert.equal(await gateway.exited, 0);
    assert.ok(gateway.lines.some((line) => line.msg === "signal repeated; already shutting down"));
    assert.ok(!gateway.lines.some((line) => line.msg === "second signal; exiting now"));
  });
});

// A request whose target is built to make the gateway's text handling slow must cost about what
// any request of its size costs: the gateway serves every client from one event loop, so a
// stall for one is a stall for all. Loose bounds only (the machine running `npm test` is shared);
// `npm run soak -- --hostile` holds the tight ones.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, test } from "node:test";
import { startGatewayProgram, type TestGatewayProgram } from "../support/gateway.ts";
import { writeKeysFile } from "../support/keys.ts";
import { type BackendProcess, startDemoBackendProcess } from "../support/processes.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;
// Node's default header limit (16 KB) holds the request line: the target stays just under it.
const HOSTILE_TARGETS: Readonly<Record<string, string>> = {
  "?key pieces": `/v1/pets${"?key".repeat(3_900)}`,
  "&token pieces": `/v1/pets?${"&token".repeat(2_600)}`,
  "a run one short of a key": `/v1/pets/${`${"a".repeat(23)}/`.repeat(650)}`,
};
// Past this the client gives up: the gateway is stalled, and the test says so without waiting it out.
const GIVE_UP_MS = 5_000;

let backend: BackendProcess;
let gateway: TestGatewayProgram;
before(async () => {
  backend = await startDemoBackendProcess();
  gateway = await startGatewayProgram({
    upstreamUrl: backend.url,
    keys,
    env: { HOST: "127.0.0.1", LOG_LEVEL: "info" },
  });
});
after(async () => {
  // A stalled gateway would not get to its SIGTERM handler in time.
  await gateway?.stop("SIGKILL");
  await backend?.close();
});

/** Milliseconds until the whole answer is in, or Infinity when the client gave up. */
function timed(path: string, withKey: boolean, agent: http.Agent): Promise<number> {
  const started = performance.now();
  return new Promise((done) => {
    const headers: Record<string, string> = withKey ? { authorization: `Bearer ${key}` } : {};
    const req = http.get({ host: "127.0.0.1", port: gateway.port, path, headers, agent }, (res) => {
      res.resume();
      res.on("end", () => done(performance.now() - started));
      res.on("error", () => done(Number.POSITIVE_INFINITY));
    });
    req.setTimeout(GIVE_UP_MS, () => req.destroy());
    req.on("error", () => done(Number.POSITIVE_INFINITY));
  });
}

test("a hostile request target is answered within a second and does not stall other clients", async () => {
  const canaryAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const hostileAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let i = 0; i < 20; i++) await timed("/v1/pets?limit=1", true, canaryAgent);
    let hostileDone = false;
    const canary: number[] = [];
    const canaryRuns = (async () => {
      while (!hostileDone) {
        const ms = await timed("/v1/pets?limit=1", true, canaryAgent);
        canary.push(ms);
        if (ms === Number.POSITIVE_INFINITY) return;
        await new Promise((pause) => setTimeout(pause, 2));
      }
    })();
    const hostile: { shape: string; ms: number }[] = [];
    try {
      hostiles: for (let round = 0; round < 10; round++) {
        for (const [shape, target] of Object.entries(HOSTILE_TARGETS)) {
          const ms = await timed(target, false, hostileAgent);
          hostile.push({ shape, ms });
          if (ms === Number.POSITIVE_INFINITY) break hostiles;
        }
      }
    } finally {
      hostileDone = true;
      await canaryRuns;
    }
    const canaryWorst = Math.max(...canary);
    const figures = `hostile requests: ${hostile.map(({ shape, ms }) => `${shape} ${ms.toFixed(1)} ms`).join(", ")}; canary worst ${canaryWorst.toFixed(1)} ms over ${canary.length} requests`;
    for (const { ms } of hostile) assert.ok(ms < 1_000, figures);
    assert.ok(canaryWorst < 1_000, figures);
    console.log(figures);
  } finally {
    canaryAgent.destroy();
    hostileAgent.destroy();
  }
});

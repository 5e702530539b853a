// Clients that do not read cannot pin the gateway's memory: 30 connections each pipeline 32
// requests for a ~1 MB answer the gateway holds to judge it whole, and never read a byte. What the
// process may hold is bounded by server.maxBufferedBytes (64 MiB) and, per connection, by
// server.maxQueuedAnswerBytes (1 MiB); the rest waits at the backend or in the clients' sockets.
// RSS is reported before, at its peak and after; what is asserted once the clients leave is what
// is live after a full GC, since glibc decides when freed memory goes back to the system.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { GATEWAY_NODE_FLAGS } from "../../scripts/start-command.ts";
import {
  jsonAnswer,
  type ProgrammableBackend,
  startProgrammableBackend,
} from "../fixtures/programmable-backend.ts";
import { eventually } from "../support/eventually.ts";
import { pipelinedRequest } from "../support/framing-probes.ts";
import { startGatewayProgram, type TestGatewayProgram } from "../support/gateway.ts";
import { writeKeysFile } from "../support/keys.ts";

const CONNECTIONS = 30;
const PIPELINED = 32;
const MB = 1024 * 1024;
// About 1 MB of pets that keep the contract (under the 1 MiB answer cap, so it is held whole).
const PET_NAME = "x".repeat(100);
const PAGE = JSON.stringify(
  Array.from({ length: 6500 }, (_, id) => ({ id, name: PET_NAME, categoryId: 7, status: "available" })),
);

const keys = writeKeysFile(["acme"]);
const { key } = keys;
let backend: ProgrammableBackend;
let gateway: TestGatewayProgram;

/** Resident set of the gateway process, from the kernel. */
function rssOf(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(line?.[1] ?? 0) * 1024;
}

/** heapUsed + arrayBuffers after a full collection, as the gateway itself measures them. */
async function heldAfterGc(): Promise<{ held: number; rss: number }> {
  const memoryLines = () => gateway.lines.filter((line) => line.msg === "memory");
  const seen = memoryLines().length;
  gateway.child.kill("SIGUSR2");
  await eventually("the gateway's memory line", () => memoryLines().length > seen);
  const line = memoryLines().at(-1) as Record<string, number>;
  return { held: (line.heapUsed as number) + (line.arrayBuffers as number), rss: line.rss as number };
}

before(async () => {
  assert.ok(PAGE.length > 900_000 && PAGE.length < 1_048_576, `a page of ${PAGE.length} bytes`);
  backend = await startProgrammableBackend();
  backend.behave(() => jsonAnswer(200, PAGE));
  gateway = await startGatewayProgram({
    upstreamUrl: backend.url,
    keys,
    // Node's flags as `npm start` gives them (a small young generation), and a GC on demand.
    program: [...GATEWAY_NODE_FLAGS, "--expose-gc", "test/fixtures/measured-gateway.ts"],
  });
});
after(async () => {
  await gateway?.stop();
  await backend?.close();
});

describe("clients that never read", () => {
  test(`${CONNECTIONS} connections x ${PIPELINED} pipelined ~1 MB answers: RSS stays bounded, the heap comes back`, async (t) => {
    const pid = gateway.child.pid as number;
    // Warm up: one answer read whole, so the baseline includes what serving at all costs.
    const warm = net.connect(gateway.port, "127.0.0.1");
    warm.end(pipelinedRequest(key).replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n"));
    warm.resume();
    await new Promise((done) => warm.on("close", done));
    const baseline = await heldAfterGc();
    const rssBefore = rssOf(pid);

    const sockets = Array.from({ length: CONNECTIONS }, () => {
      const socket = net.connect(gateway.port, "127.0.0.1");
      socket.on("error", () => {});
      // Never read: no 'data' listener, and the socket paused, so the kernel buffers fill.
      socket.pause();
      socket.write(pipelinedRequest(key).repeat(PIPELINED));
      return socket;
    });
    let peak = rssBefore;
    const sampling = setInterval(() => {
      peak = Math.max(peak, rssOf(pid));
    }, 50);
    // Until the backend has been asked no more for a while: what the gateway would forward, it has.
    let asked = -1;
    await eventually(
      "the backend asked for nothing more for a second",
      async () => {
        const now = backend.requests.length;
        const settled = now === asked;
        asked = now;
        if (!settled) await new Promise((wake) => setTimeout(wake, 1000));
        return settled;
      },
      30_000,
    );
    peak = Math.max(peak, rssOf(pid));
    clearInterval(sampling);
    const held = await heldAfterGc();
    t.diagnostic(`live while held (after a GC): heapUsed+arrayBuffers ${(held.held / MB).toFixed(1)} MB`);
    for (const socket of sockets) socket.destroy();
    const leftAt = performance.now();
    // Once the clients have left, what the gateway held for them goes: polled, since the streams
    // of their exchanges end over the next moments.
    let afterLeaving = await heldAfterGc();
    await eventually(
      "heapUsed+arrayBuffers back within 10 MB of the baseline",
      async () => {
        afterLeaving = await heldAfterGc();
        return afterLeaving.held - baseline.held < 10 * MB;
      },
      20_000,
    );
    t.diagnostic(`back ${Math.round(performance.now() - leftAt)} ms after the clients left`);
    const rssAfter = rssOf(pid);
    t.diagnostic(
      `backend asked ${asked} times for ${CONNECTIONS * PIPELINED} requests; RSS before ${(rssBefore / MB).toFixed(0)} MB, ` +
        `peak ${(peak / MB).toFixed(0)} MB (+${((peak - rssBefore) / MB).toFixed(0)} MB), after ${(rssAfter / MB).toFixed(0)} MB; ` +
        `heapUsed+arrayBuffers after GC: ${(baseline.held / MB).toFixed(1)} MB before, ${(afterLeaving.held / MB).toFixed(1)} MB after`,
    );
    // The goal is 100 MB: what is held (the 64 MiB budget) plus V8's and the allocator's share
    // after validating ~150 answers of 1 MB in a burst. Measured +70 to +105 MB on 2026-11-25,
    // most runs +72 to +84 (bench/results/2026-11-25-freed-answers.md; `npm run soak --
    // --hostile` measures it again). Bounded here with room for a loaded machine, not tight.
    assert.ok(peak - rssBefore < 150 * MB, `RSS grew by ${((peak - rssBefore) / MB).toFixed(0)} MB`);
    // Still serving.
    const probe = await fetch(`${gateway.opsUrl}/healthz`);
    assert.equal(probe.status, 200);
  });
});

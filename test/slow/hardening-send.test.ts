// Answers a client does not read, or reads too slowly to ever finish: the gateway's own send
// timers cut the connection (server.sendTimeoutMs without progress, server.sendDeadlineMs for the
// whole answer), count it as SEND_TIMEOUT and log it as 499, and go on serving everyone else.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { type ProgrammableBackend, startProgrammableBackend } from "../fixtures/programmable-backend.ts";
import { watchForCrashes } from "../support/crashes.ts";
import { eventually } from "../support/eventually.ts";
import { startGateway, type TestGateway } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { sampleValue, scrape } from "../support/metrics.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;
// Far more than the kernel's buffers on loopback hold, streamed (not JSON: never held whole).
const BIG = Buffer.alloc(48 * 1024 * 1024, "x");

describe("the gateway's send timers", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  const crashes = watchForCrashes();
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave((req) =>
      req.url.startsWith("/v1/pets/")
        ? { kind: "respond", status: 200, headers: { "content-type": "application/octet-stream" }, body: BIG }
        : { kind: "respond", status: 200, headers: { "content-type": "application/json" }, body: "[]" },
    );
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: {
        server: { sendTimeoutMs: 1000, sendDeadlineMs: 3000 },
        upstream: { timeoutMs: 60_000 },
        policies: { responseContract: { mode: "off" } },
      },
    });
  });
  after(async () => {
    await gw.close();
    await backend.close();
    crashes.stop();
    assert.deepEqual(crashes.crashes, []);
  });

  const ask = (path: string) => `GET /v1${path} HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n\r\n`;
  const cuts = async () =>
    sampleValue(await scrape(gw), "gateway_rejections_total", { reason: "request", code: "SEND_TIMEOUT" }) ??
    0;

  test("a client that stops reading is cut after sendTimeoutMs without progress, logged 499 SEND_TIMEOUT", async () => {
    const before = await cuts();
    const socket = net.connect(Number(new URL(gw.origin).port), "127.0.0.1");
    socket.on("error", () => {});
    let received = 0;
    socket.on("data", (chunk: Buffer) => {
      received += chunk.length;
      // Read the head and a little, then never again.
      if (received > 64 * 1024) socket.pause();
    });
    const sentAt = performance.now();
    socket.write(ask("/pets/1"));
    // A client that does not read does not see the close either: the gateway's access line tells.
    const line = await eventually(
      "the access line",
      () => gw.logs.messages("request").find((l) => l.code === "SEND_TIMEOUT" && l.path === "/v1/pets/1"),
      10_000,
    );
    const took = performance.now() - sentAt;
    socket.destroy();
    assert.ok(took > 900 && took < 8000, `cut after ${Math.round(took)} ms`);
    assert.ok(received < BIG.length, "the answer was not delivered whole");
    assert.equal(line.status, 499);
    assert.equal(line.reason, "request");
    assert.equal(await cuts(), before + 1);
    // Everyone else is still served.
    assert.equal((await request(`${gw.url}/pets`, { key })).status, 200);
  });

  test("a client reading steadily but too slowly is cut at sendDeadlineMs", async () => {
    const socket = net.connect(Number(new URL(gw.origin).port), "127.0.0.1");
    socket.on("error", () => {});
    // 256 KB every 50 ms: steady progress, so the stall timer never fires; 48 MB would take ~10 s.
    let allowance = 256 * 1024;
    socket.on("data", (chunk: Buffer) => {
      allowance -= chunk.length;
      if (allowance <= 0) socket.pause();
    });
    const reader = setInterval(() => {
      allowance = 256 * 1024;
      socket.resume();
    }, 50);
    const sentAt = performance.now();
    socket.write(ask("/pets/2"));
    const line = await eventually(
      "the access line",
      () => gw.logs.messages("request").find((l) => l.code === "SEND_TIMEOUT" && l.path === "/v1/pets/2"),
      15_000,
    );
    const took = performance.now() - sentAt;
    clearInterval(reader);
    socket.destroy();
    assert.ok(took > 2900 && took < 10_000, `cut after ${Math.round(took)} ms`);
    assert.equal(line.status, 499);
  });

  test("a client that reads its answer is never cut, however large", async () => {
    const started = performance.now();
    const answer = await fetch(`${gw.url}/pets/3`, { headers: { authorization: `Bearer ${key}` } });
    const body = await answer.arrayBuffer();
    assert.equal(body.byteLength, BIG.length);
    assert.ok(performance.now() - started < 3000, "read within the deadline");
  });
});

// The gateway program itself (as `npm start` runs it), as operators run it: everything bad at once
// does not crash it or leak a key, and SIGTERM drains it gracefully within its deadline.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { contractAnswer } from "../fixtures/contract-answer.ts";
import {
  type Behaviour,
  type ProgrammableBackend,
  startProgrammableBackend,
} from "../fixtures/programmable-backend.ts";
import { eventually } from "../support/eventually.ts";
import { framingProbes, pipelinedRequest } from "../support/framing-probes.ts";
import { startGatewayProgram } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import type { GatewayProcess } from "../support/processes.ts";
import { parseResponses, rawExchange } from "../support/raw-socket.ts";
import { assertNoSecrets } from "../support/secrets.ts";

const keys = writeKeysFile(["acme", "globex"]);
const { key, keyOf } = keys;

/** The harness's gateway process with what these tests time and read: its /v1 URL, and its exit with when it happened. */
interface TimedGateway extends Omit<GatewayProcess, "exited"> {
  readonly url: string;
  /** Resolves with the exit code and when it happened; fails if stdout held anything but JSON lines. */
  readonly exited: Promise<{ code: number | null; at: number }>;
}

async function spawnGateway(upstreamUrl: string, config: Record<string, unknown>): Promise<TimedGateway> {
  // Loopback only, the ops port included (startGatewayProgram's config; HOST covers the public one).
  const gw = await startGatewayProgram({
    upstreamUrl,
    keys,
    config,
    env: { HOST: "127.0.0.1", LOG_LEVEL: "info" },
  });
  return {
    ...gw,
    url: `${gw.origin}/v1`,
    exited: Promise.all([gw.exited, gw.exitedAt]).then(([code, at]) => {
      assert.deepEqual(gw.notJson, [], "the process logs JSON lines only");
      return { code, at };
    }),
  };
}

/** A GET that resolves with status, headers and body, or with the error. */
function get(url: string, agent: http.Agent | false = false) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string } | Error>(
    (resolve) => {
      const req = http.get(url, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on("error", resolve);
      });
      req.on("error", resolve);
    },
  );
}

const STACK_LINE = /^\s+at .+:\d+:\d+\)?$/m;

describe("graceful shutdown of the gateway process", () => {
  let backend: ProgrammableBackend;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave((req) => {
      if (req.url === "/v1/pets/5") {
        return {
          kind: "slow-body",
          status: 200,
          chunks: ['{"id":5,"name":"Rex",', '"categoryId":7}'],
          delayMs: 1500,
        };
      }
      if (req.url === "/v1/pets/6") return { kind: "hang" };
      return contractAnswer(req);
    });
  });
  after(() => backend.close());

  test("SIGTERM: readiness goes false, requests are served through the drain, in-flight ones complete with Connection: close, idle sockets close, logs are flushed, exit 0 before the deadline", async () => {
    const drainMs = 800;
    const deadlineMs = 6000;
    const gw = await spawnGateway(backend.url, {
      server: { shutdownDrainMs: drainMs, shutdownTimeoutMs: deadlineMs },
      upstream: { timeoutMs: 5000 },
    });
    // An idle keep-alive connection, as a load balancer keeps them.
    const idle = net.connect(gw.port, "127.0.0.1");
    let idleText = "";
    let idleClosedAt: number | undefined;
    idle.setEncoding("latin1");
    idle.on("data", (data: string) => {
      idleText += data;
    });
    idle.on("close", () => {
      idleClosedAt = performance.now();
    });
    idle.on("error", () => {});
    idle.write(`GET /v1/pets HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    await eventually("the answer on the idle connection", () => parseResponses(idleText).length > 0);
    assert.equal(parseResponses(idleText)[0]?.status, 200);

    const inFlight = get(`${gw.url}/pets/5`);
    await eventually("the slow request at the backend", () =>
      backend.requests.some((r) => r.url === "/v1/pets/5"),
    );
    const signalledAt = performance.now();
    gw.child.kill("SIGTERM");

    let readiness = 0;
    for (let i = 0; i < 50 && readiness !== 503; i++) {
      readiness = (await request(`${gw.opsUrl}/readyz`)).status;
      if (readiness !== 503) await sleep(10);
    }
    assert.equal(readiness, 503, "readiness goes false at once");
    const during = await get(`${gw.url}/pets`);
    assert.ok(!(during instanceof Error), String(during));
    assert.equal(during.status, 200, "still serving during the drain delay");
    assert.equal(during.headers.connection, "close");
    assert.ok(performance.now() - signalledAt < drainMs, "that request was inside the drain delay");

    const completed = await inFlight;
    assert.ok(!(completed instanceof Error), String(completed));
    assert.equal(completed.status, 200);
    assert.deepEqual(JSON.parse(completed.body), { id: 5, name: "Rex", categoryId: 7 });
    assert.equal(completed.headers.connection, "close");

    const { code, at } = await gw.exited;
    assert.equal(code, 0);
    assert.ok(at - signalledAt >= drainMs, "the process served through the drain delay");
    assert.ok(at - signalledAt < deadlineMs, `exited ${Math.round(at - signalledAt)} ms after SIGTERM`);
    assert.ok(
      idleClosedAt !== undefined && idleClosedAt - signalledAt < drainMs + 2000,
      "the idle socket was closed",
    );
    const messages = gw.lines.map((line) => line.msg);
    assert.ok(messages.includes("shutting down"));
    assert.equal(messages.at(-1), "stopped", "the last line is written before the exit");
    const served = gw.lines
      .filter((line) => line.msg === "request" && line.status === 200)
      .map((l) => l.path);
    assert.deepEqual(served.sort(), ["/v1/pets", "/v1/pets", "/v1/pets/5"]);
    assert.doesNotMatch(gw.stderr(), STACK_LINE);
  });

  test("a second signal, a second or more after the first, exits at once", async () => {
    const gw = await spawnGateway(backend.url, {
      server: { shutdownDrainMs: 5000, shutdownTimeoutMs: 20_000 },
      upstream: { timeoutMs: 20_000 },
    });
    const seen = backend.requests.length;
    const hanging = get(`${gw.url}/pets/6`);
    await eventually("the hanging request at the backend", () => backend.requests.length > seen);
    gw.child.kill("SIGTERM");
    // Within a second it would be the same shutdown (shutdown-drops-nothing tests that).
    await sleep(1200);
    const secondAt = performance.now();
    gw.child.kill("SIGTERM");
    const { code, at } = await gw.exited;
    assert.equal(code, 1);
    assert.ok(at - secondAt < 2000, `exited ${Math.round(at - secondAt)} ms after the second signal`);
    assert.ok(gw.lines.some((line) => line.msg === "second signal; exiting now"));
    assert.ok((await hanging) instanceof Error, "the hanging request was cut, not answered");
  });

  test("requests still open at the deadline do not keep the process alive: each is answered 503 and logged", async () => {
    const gw = await spawnGateway(backend.url, {
      server: { shutdownDrainMs: 200, shutdownTimeoutMs: 1500 },
      upstream: { timeoutMs: 20_000 },
    });
    const seen = backend.requests.length;
    const hanging = get(`${gw.url}/pets/6`);
    await eventually("the hanging request at the backend", () => backend.requests.length > seen);
    const signalledAt = performance.now();
    gw.child.kill("SIGTERM");
    const { code, at } = await gw.exited;
    assert.equal(code, 1);
    assert.ok(
      at - signalledAt >= 1400 && at - signalledAt < 4000,
      `exited after ${Math.round(at - signalledAt)} ms`,
    );
    assert.ok(
      gw.lines.some((line) => line.msg === "shutdown deadline reached; exiting with requests still open"),
    );
    // The request the deadline ended was answered, not cut, and has its access line.
    const answer = await hanging;
    assert.ok(!(answer instanceof Error), "the request was answered");
    assert.equal(answer.status, 503);
    assert.equal(JSON.parse(answer.body).code, "SHUTTING_DOWN");
    assert.equal(answer.headers.connection, "close");
    const line = gw.lines.find((l) => l.msg === "request" && l.path === "/v1/pets/6");
    assert.equal(line?.status, 503);
    assert.equal(line?.code, "SHUTTING_DOWN");
  });
});

describe("the gateway process under everything at once", () => {
  test("framing attacks, garbage bytes, backend faults, bad keys and clients leaving: no crash, no stack, no key in any output", async () => {
    const backend = await startProgrammableBackend();
    const gw = await spawnGateway(backend.url, {
      server: {
        headersTimeoutMs: 1000,
        requestTimeoutMs: 2000,
        shutdownDrainMs: 100,
        shutdownTimeoutMs: 5000,
      },
      upstream: { timeoutMs: 500, connectTimeoutMs: 500 },
      // Enforced, so that every fault the backend injects is an error the client sees.
      policies: { responseContract: { mode: "enforce" } },
    });
    const outputs: string[] = [];
    try {
      backend.behave(contractAnswer);
      const second = pipelinedRequest(key);
      for (const probe of Object.values(framingProbes(key))) {
        const outcome = await rawExchange(gw.port, probe + second, { waitMs: 1000 });
        outputs.push(outcome.text);
        assert.ok(outcome.closed && outcome.responses.length === 1);
      }
      // Garbage: random bytes, from a seeded generator so a failure can be replayed.
      let seed = 0x9e3779b9;
      const random = () => {
        seed ^= seed << 13;
        seed ^= seed >>> 17;
        seed ^= seed << 5;
        return (seed >>> 0) / 2 ** 32;
      };
      const garbage = Array.from({ length: 60 }, (_, i) => {
        const bytes = Array.from({ length: 1 + Math.floor(random() * 400) }, () =>
          String.fromCharCode(Math.floor(random() * 256)),
        ).join("");
        return i % 2 ? `GET /v1/pets HTTP/1.1\r\n${bytes}` : bytes;
      });
      await Promise.all(
        garbage.map(async (bytes) =>
          outputs.push((await rawExchange(gw.port, bytes, { waitMs: 2500 })).text),
        ),
      );
      // Every fault the backend can inject, a few times each.
      const faults: Behaviour[] = [
        { kind: "reset-before-headers" },
        { kind: "hang" },
        { kind: "reset-mid-body", status: 200, bodyPrefix: '[{"id":1,', declaredLength: 400 },
        { kind: "slow-body", status: 200, chunks: ["[", "]"], delayMs: 800 },
        { kind: "respond", status: 200, headers: { "content-type": "application/json" }, body: "{not json" },
        {
          kind: "respond",
          status: 200,
          headers: { "content-type": "application/json", "content-encoding": "gzip" },
          body: "not gzip",
        },
        { kind: "respond", status: 500, headers: { "content-type": "text/plain" }, body: "boom" },
        {
          kind: "respond",
          status: 200,
          headers: { "content-type": "application/json" },
          body: `[${"1,".repeat(600_000)}1]`,
        },
      ];
      for (const fault of faults) {
        backend.behave(() => fault);
        const answers = await Promise.all(
          ["/pets", "/pets/1", "/pets?limit=3"].map(async (path) => {
            const answer = await get(`${gw.url}${path}`);
            if (!(answer instanceof Error)) outputs.push(answer.body);
            return answer;
          }),
        );
        for (const answer of answers) {
          if (answer instanceof Error) assert.match(answer.message, /aborted|socket hang up|ECONNRESET/);
          else assert.ok(answer.status >= 400, `${fault.kind}: ${answer.status}`);
        }
      }
      backend.behave(contractAnswer);
      // Bad keys, and valid keys in every position a client might put them.
      const other = keyOf("globex");
      for (const authorization of [
        `Bearer ${key}x`,
        `Bearer ${key.slice(0, -1)}`,
        `Basic ${Buffer.from(`user:${key}`).toString("base64")}`,
        `Bearer  ${other}  `,
        `bearer ${other}`,
        `Token ${key}`,
        key,
      ]) {
        const answer = await request(`${gw.url}/pets`, { headers: { authorization } });
        outputs.push(answer.body);
        assert.ok([200, 401].includes(answer.status));
      }
      // Clients that leave while the backend thinks.
      backend.behave(() => ({ kind: "hang" }));
      for (let i = 0; i < 10; i++) {
        const req = http.get(`${gw.url}/pets`, { headers: { authorization: `Bearer ${key}` } });
        req.on("error", () => {});
        setTimeout(() => req.destroy(), 30);
      }
      await sleep(300);
      backend.behave(contractAnswer);

      assert.equal(gw.child.exitCode, null, "the process is alive");
      assert.equal((await request(`${gw.opsUrl}/healthz`)).status, 200);
      assert.equal((await request(`${gw.url}/pets`, { key })).status, 200);
      const metrics = await request(`${gw.opsUrl}/metrics`);
      outputs.push(metrics.body);
      gw.child.kill("SIGTERM");
      assert.equal((await gw.exited).code, 0);
      assert.doesNotMatch(gw.stderr(), STACK_LINE);
      const complaints = gw
        .stderr()
        .split("\n")
        .filter((line) => line !== "" && !/ExperimentalWarning|--trace-warnings/.test(line));
      assert.deepEqual(complaints, [], "nothing on stderr");
      assert.deepEqual(
        gw.lines.filter((line) => line.level === "fatal"),
        [],
      );
      const checked = assertNoSecrets(
        keys.keys,
        [...gw.raw, ...outputs, gw.stderr()],
        "the gateway process's output",
      );
      assert.ok(checked > 200, `only ${checked} outputs checked`);
    } finally {
      if (gw.child.exitCode === null) gw.child.kill("SIGKILL");
      await backend.close();
    }
  });
});

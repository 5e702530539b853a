import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import http from "node:http";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { buildOpsServer } from "../../src/gateway.ts";
import { createOpsHandler, type OpsSource, type ServedReport } from "../../src/ops.ts";
import {
  type Behaviour,
  jsonAnswer,
  type ProgrammableBackend,
  type RecordedRequest,
  startProgrammableBackend,
} from "../fixtures/programmable-backend.ts";
import { eventually } from "../support/eventually.ts";
import { startGateway, startGatewayProgram, type TestGateway } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { parsePrometheus, type Sample, sampleValue, scrape } from "../support/metrics.ts";
import { findProgram } from "../support/processes.ts";

const keys = writeKeysFile(["acme", "globex"]);
const { keyOf } = keys;
const acme = keyOf("acme");
const globex = keyOf("globex");
const PET = '{"id":1,"name":"Rex","categoryId":3,"status":"available"}';

/** Answers by path: /pets/13 drops the connection, /pets/404 is not found, other pets exist. */
const petBehaviour = (req: RecordedRequest): Behaviour => {
  const path = req.url.split("?")[0];
  if (path === "/v1/pets") return req.method === "POST" ? jsonAnswer(201, PET) : jsonAnswer(200, `[${PET}]`);
  if (path === "/v1/pets/13") return { kind: "reset-before-headers" };
  if (path === "/v1/pets/404")
    return jsonAnswer(404, '{"code":"NOT_FOUND","message":"no such pet","status":404}');
  return jsonAnswer(200, PET);
};

async function startPetBackend(): Promise<ProgrammableBackend> {
  const backend = await startProgrammableBackend();
  backend.behave(petBehaviour);
  return backend;
}

/** Sends a request the HTTP parser refuses; resolves with the status line's code. */
async function sendUnparsable(origin: string): Promise<number> {
  const { port } = new URL(origin);
  const socket = net.connect(Number(port), "127.0.0.1");
  socket.end("GET /v1/pets HTTP/1.1\r\nHost: x\r\nBroken header line\r\n\r\n");
  let text = "";
  for await (const chunk of socket) text += String(chunk);
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
}

/** Many requests over a few keep-alive connections (one connection per request is far slower). */
async function sendMany(paths: readonly string[], origin: string, concurrency = 8): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const statuses: number[] = [];
  let next = 0;
  const lane = async () => {
    while (next < paths.length) {
      const path = paths[next++] as string;
      statuses.push(
        await new Promise<number>((resolve, reject) => {
          http
            .get(`${origin}${path}`, { agent }, (res) => {
              res.resume();
              res.on("end", () => resolve(res.statusCode ?? 0));
            })
            .on("error", reject);
        }),
      );
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  agent.destroy();
  return statuses;
}

const gatewaySeries = (samples: readonly Sample[]) =>
  samples.filter((sample) => sample.name.startsWith("http_") || sample.name.startsWith("gateway_"));

describe("metrics and access log after a known mix of requests", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let samples: Sample[];
  before(async () => {
    backend = await startPetBackend();
    gw = await startGateway({ upstreamUrl: backend.url, keys });
    const send = (path: string, options: Parameters<typeof request>[1] = {}) =>
      request(`${gw.origin}${path}`, options);
    const expectStatus = async (status: number, answer: Promise<{ status: number }>) =>
      assert.equal((await answer).status, status);
    const badPet = JSON.stringify({ categoryId: 1 });
    await Promise.all([
      ...[1, 2, 3].map(() => expectStatus(200, send("/v1/pets", { key: acme }))),
      expectStatus(
        201,
        send("/v1/pets", { key: globex, method: "POST", body: '{"name":"Rex","categoryId":3}' }),
      ),
      expectStatus(401, send("/v1/pets")),
      expectStatus(401, send("/v1/pets")),
      expectStatus(401, send("/v1/pets", { key: "not-a-key" })),
      expectStatus(400, send("/v1/pets", { key: acme, method: "POST", body: badPet })),
      expectStatus(400, send("/v1/pets", { key: acme, method: "POST", body: badPet })),
      expectStatus(400, send("/v1/pets?limit=many", { key: acme })),
      expectStatus(404, send("/v1/cats", { key: acme })),
      expectStatus(404, send("/v2/pets/1", { key: acme })),
      expectStatus(405, send("/v1/pets", { key: acme, method: "DELETE" })),
      expectStatus(400, send("/v1/pets/1;jsessionid=2", { key: acme })),
      // The deprecated operation: three calls answered, one not found by the backend, one the backend drops.
      expectStatus(200, send("/v1/pets/1", { key: acme })),
      expectStatus(200, send("/v1/pets/2", { key: acme })),
      expectStatus(200, send("/v1/pets/3", { key: globex })),
      expectStatus(404, send("/v1/pets/404", { key: acme })),
      expectStatus(502, send("/v1/pets/13", { key: acme })),
    ]);
    assert.equal(await sendUnparsable(gw.origin), 400);
    samples = await scrape(gw);
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("every answer is counted once by operation, method and status", () => {
    const count = (operation: string, method: string, status: string) =>
      sampleValue(samples, "http_server_request_duration_seconds_count", {
        operation,
        http_request_method: method,
        http_response_status_code: status,
      });
    const expected: [string, string, string, number][] = [
      ["listPets", "GET", "200", 3],
      ["listPets", "GET", "401", 3],
      ["listPets", "GET", "400", 1],
      ["createPet", "POST", "201", 1],
      ["createPet", "POST", "400", 2],
      ["getPet", "GET", "200", 3],
      ["getPet", "GET", "404", 1],
      ["getPet", "GET", "502", 1],
      ["unmatched", "GET", "404", 2],
      ["unmatched", "DELETE", "405", 1],
      ["unmatched", "GET", "400", 1],
    ];
    for (const [operation, method, status, value] of expected) {
      assert.equal(count(operation, method, status), value, `${operation} ${method} ${status}`);
    }
    // Nothing else: the parser's refusal has no request line, so it is a rejection only.
    const total = expected.reduce((sum, [, , , value]) => sum + value, 0);
    assert.equal(sampleValue(samples, "http_server_request_duration_seconds_count"), total);
    // The +Inf bucket of each series holds the same count.
    assert.equal(sampleValue(samples, "http_server_request_duration_seconds_bucket", { le: "+Inf" }), total);
  });

  test("every refusal is counted by operation, reason and code, the parser's included", () => {
    const expected: [string, string, string, number][] = [
      ["listPets", "auth", "MISSING_API_KEY", 2],
      ["listPets", "auth", "INVALID_API_KEY", 1],
      ["listPets", "validation", "INVALID_PARAMETER", 1],
      ["createPet", "validation", "INVALID_BODY", 2],
      ["unmatched", "routing", "NOT_FOUND", 2],
      ["unmatched", "routing", "METHOD_NOT_ALLOWED", 1],
      ["unmatched", "request", "BAD_PATH", 1],
      ["unmatched", "request", "BAD_REQUEST", 1],
      ["getPet", "upstream", "UPSTREAM_UNAVAILABLE", 1],
    ];
    for (const [operation, reason, code, value] of expected) {
      assert.equal(
        sampleValue(samples, "gateway_rejections_total", { operation, reason, code }),
        value,
        `${operation} ${reason} ${code}`,
      );
    }
    const total = expected.reduce((sum, [, , , value]) => sum + value, 0);
    assert.equal(sampleValue(samples, "gateway_rejections_total"), total);
  });

  test("the backend's own answers and the gateway's overhead are timed per operation", () => {
    const upstream = (operation: string, method: string, status: string) =>
      sampleValue(samples, "http_client_request_duration_seconds_count", {
        operation,
        http_request_method: method,
        http_response_status_code: status,
      });
    assert.equal(upstream("listPets", "GET", "200"), 3);
    assert.equal(upstream("createPet", "POST", "201"), 1);
    assert.equal(upstream("getPet", "GET", "200"), 3);
    assert.equal(upstream("getPet", "GET", "404"), 1);
    // A backend that dropped the connection gave no answer to time: it is a rejection instead.
    assert.equal(sampleValue(samples, "http_client_request_duration_seconds_count"), 8);
    assert.equal(sampleValue(samples, "gateway_overhead_seconds_count", { operation: "listPets" }), 3);
    assert.equal(sampleValue(samples, "gateway_overhead_seconds_count", { operation: "getPet" }), 4);
    // Sub-millisecond buckets: the gateway's share is measured in microseconds.
    const bounds = samples
      .filter((sample) => sample.name === "gateway_overhead_seconds_bucket")
      .map((sample) => Number(sample.labels.le));
    assert.ok(bounds.includes(0.00005) && bounds.includes(0.0005));
    const overhead = sampleValue(samples, "gateway_overhead_seconds_sum");
    const total = sampleValue(samples, "http_server_request_duration_seconds_sum");
    assert.ok(overhead > 0 && overhead < total, `overhead ${overhead} s of ${total} s`);
  });

  test("deprecated calls are counted per consumer once authenticated, whatever the backend answered", () => {
    const calls = (consumer: string) =>
      sampleValue(samples, "gateway_deprecated_calls_total", { operation: "getPet", consumer });
    assert.equal(calls("acme"), 4);
    assert.equal(calls("globex"), 1);
    assert.equal(sampleValue(samples, "gateway_deprecated_calls_total"), 5);
  });

  test("what is not a refusal is counted on its own: the limit defaulted on the way", () => {
    assert.equal(
      sampleValue(samples, "gateway_limit_adjustments_total", {
        operation: "listPets",
        parameter: "limit",
        adjustment: "defaulted",
      }),
      3,
    );
    assert.equal(sampleValue(samples, "gateway_api_keys"), 2);
    assert.equal(sampleValue(samples, "gateway_upstream_up"), 1);
  });

  test("default process metrics (event loop lag, heap, GC) are exported", () => {
    for (const name of [
      "nodejs_eventloop_lag_p99_seconds",
      "nodejs_heap_size_used_bytes",
      "process_cpu_seconds_total",
    ]) {
      assert.ok(
        samples.some((sample) => sample.name === name),
        name,
      );
    }
    assert.ok(samples.some((sample) => sample.name.startsWith("nodejs_gc_duration_seconds")));
  });

  // Prometheus' own linter, on what a scrape of this gateway really returns: a name or type it
  // refuses is one an ops team's CI (or Prometheus itself, in strict mode) refuses too.
  const promtool = findProgram("promtool");
  test("promtool check metrics accepts a scrape of the gateway", {
    skip: promtool ? false : "promtool not found: apt-get install prometheus (see README, Development)",
  }, async () => {
    const exposition = await request(`${gw.opsUrl}/metrics`);
    const check = spawnSync(promtool as string, ["check", "metrics"], {
      input: exposition.body,
      encoding: "utf8",
    });
    assert.equal(check.status, 0, `promtool check metrics: ${check.stdout}${check.stderr}`);
  });

  test("each request wrote one access line with its id, operation, status, durations and consumer", () => {
    const lines = gw.logs.messages("request");
    assert.equal(lines.length, 19 + 1);
    const deprecated = lines.filter((line) => line.operation === "getPet" && line.status === 200);
    assert.equal(deprecated.length, 3);
    for (const line of deprecated) {
      assert.equal(line.method, "GET");
      assert.match(String(line.reqId), /^[0-9a-f-]{36}$/);
      assert.ok(typeof line.durationMs === "number" && line.durationMs > 0);
      assert.ok(typeof line.upstreamMs === "number" && line.upstreamMs <= line.durationMs);
      assert.equal(line.upstreamStatus, 200);
      assert.equal(line.level, "info");
      assert.equal(line.pid, process.pid);
    }
    assert.deepEqual(deprecated.map((line) => line.consumer).sort(), ["acme", "acme", "globex"]);
    const refused = lines.find((line) => line.code === "INVALID_BODY");
    assert.equal(refused?.reason, "validation");
    assert.equal(refused?.status, 400);
    assert.equal(refused?.consumer, "acme");
    assert.equal(refused?.upstreamMs, undefined, "a refused request never reached the backend");
    const dropped = lines.find((line) => line.status === 502);
    assert.equal(dropped?.code, "UPSTREAM_UNAVAILABLE");
    assert.equal(dropped?.reason, "upstream");
    assert.equal(typeof dropped?.upstreamFault, "string");
    const unparsable = lines.find((line) => line.parserError !== undefined);
    assert.deepEqual(
      { operation: unparsable?.operation, status: unparsable?.status, code: unparsable?.code },
      { operation: "unmatched", status: 400, code: "BAD_REQUEST" },
    );
  });
});

describe("request ids, secrets and bounded labels", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  before(async () => {
    backend = await startPetBackend();
    gw = await startGateway({ upstreamUrl: backend.url, keys });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("a sane X-Request-Id is kept, returned to the client and passed to the backend", async () => {
    const id = "trace-7f3a.9:client@edge/1";
    const answer = await request(`${gw.url}/pets`, { key: acme, headers: { "x-request-id": id } });
    assert.equal(answer.headers["x-request-id"], id);
    assert.equal(backend.requests.at(-1)?.headers["x-request-id"], id);
    assert.equal(gw.logs.messages("request").at(-1)?.reqId, id);
  });

  test("a missing or unreasonable X-Request-Id is replaced by a generated one, everywhere alike", async () => {
    for (const given of [undefined, "x".repeat(129), "two words", "<script>", ""]) {
      const headers: Record<string, string> = given === undefined ? {} : { "x-request-id": given };
      const answer = await request(`${gw.url}/pets/1`, { key: acme, headers });
      const id = String(answer.headers["x-request-id"]);
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, String(given));
      assert.equal(backend.requests.at(-1)?.headers["x-request-id"], id);
      assert.equal(gw.logs.messages("request").at(-1)?.reqId, id);
    }
    // Refused requests carry theirs too, so a client can quote it.
    const refused = await request(`${gw.url}/pets`, { headers: { "x-request-id": "refused-1" } });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers["x-request-id"], "refused-1");
    assert.equal(gw.logs.messages("request").at(-1)?.reqId, "refused-1");
  });

  test("no key appears in the logs or the metrics, whether valid, invalid or pasted into the query", async () => {
    const wrong = "test_this-key-is-wrong-and-secret-42";
    await request(`${gw.url}/pets`, { key: acme });
    await request(`${gw.url}/pets`, { key: wrong });
    await request(`${gw.url}/pets?api_key=${acme}&limit=5`, { key: acme });
    await request(`${gw.url}/pets?access_token=${wrong}`);
    await request(`${gw.origin}/nowhere?token=${globex}`);
    const text = gw.logs.raw.join("\n");
    for (const secret of [acme, wrong, globex]) {
      assert.ok(!text.includes(secret), "a key reached the log");
      assert.ok(!text.includes(secret.slice(5, 20)), "part of a key reached the log");
    }
    const pasted = gw.logs.messages("request").filter((line) => String(line.path).includes("[redacted]"));
    assert.equal(pasted.length, 3);
    assert.equal(pasted[0]?.path, "/v1/pets?api_key=[redacted]&limit=5");
    const metrics = (await request(`${gw.opsUrl}/metrics`)).body;
    for (const secret of [acme, wrong, globex]) assert.ok(!metrics.includes(secret));
  });

  test("10,000 distinct unknown paths and methods add not a single series", async () => {
    await sendMany(["/warm-up", "/v1/nothing"], gw.origin);
    assert.equal((await request(`${gw.origin}/warm-up`, { method: "PROPFIND" })).status, 404);
    const before = gatewaySeries(await scrape(gw)).length;
    const paths = Array.from({ length: 10_000 }, (_, i) =>
      i % 3 === 0 ? `/v1/cats/${i}` : i % 3 === 1 ? `/${i.toString(36)}/x?q=${i}` : `/v1/pets/${i}/toys`,
    );
    const statuses = await sendMany(paths, gw.origin);
    assert.ok(statuses.every((status) => status === 404));
    // Methods Node knows but the interface does not use are one value too: _OTHER.
    for (const method of ["MKCOL", "PURGE", "LOCK"]) {
      assert.equal((await request(`${gw.origin}/dav/${method}`, { method })).status, 404);
    }
    const samplesAfter = await scrape(gw);
    assert.equal(gatewaySeries(samplesAfter).length, before);
    assert.equal(
      sampleValue(samplesAfter, "http_server_request_duration_seconds_count", {
        operation: "unmatched",
        http_request_method: "_OTHER",
      }),
      4,
    );
    assert.ok(
      !samplesAfter.some((sample) => Object.values(sample.labels).some((value) => value.includes("cats"))),
    );
  });

  test("the backend's time for a streamed answer runs to the end of its body", async () => {
    backend.behave(() => ({ kind: "slow-body", status: 200, chunks: ["[", PET, "]"], delayMs: 150 }));
    try {
      const answer = await request(`${gw.url}/pets`, { key: acme });
      assert.equal(answer.status, 200);
      const line = gw.logs.messages("request").at(-1);
      assert.ok(Number(line?.upstreamMs) >= 250, `upstreamMs ${line?.upstreamMs}`);
      assert.ok(Number(line?.durationMs) - Number(line?.upstreamMs) < 250);
    } finally {
      backend.behave(petBehaviour);
    }
  });

  test("metrics are served on the ops port only", async () => {
    const answer = await request(`${gw.origin}/metrics`);
    assert.equal(answer.status, 404);
    const ops = await request(`${gw.opsUrl}/metrics`);
    assert.equal(ops.status, 200);
    assert.match(String(ops.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
    assert.doesNotThrow(() => parsePrometheus(ops.body));
  });

  test("an unknown ops path gets 404 and a write to an ops path 405, each an Error object of the catalogue", async () => {
    const missing = await request(`${gw.opsUrl}/nope`);
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.json(), { code: "NOT_FOUND", message: "No such ops endpoint", status: 404 });
    assert.ok(gw.gateway.api.validateError(missing.json()), missing.body);
    const write = await request(`${gw.opsUrl}/metrics`, { method: "POST" });
    assert.equal(write.status, 405);
    assert.deepEqual(write.json(), {
      code: "METHOD_NOT_ALLOWED",
      message: "Ops endpoints are read-only",
      status: 405,
    });
    assert.ok(gw.gateway.api.validateError(write.json()), write.body);
  });

  test("an ops endpoint whose collection fails answers 500 with an Error object of the catalogue", async () => {
    // A source that fails as the cluster's does when a worker does not answer the primary in time.
    const failing: OpsSource = {
      metrics: () => Promise.reject(new Error("a worker did not answer")),
      openMetrics: () => Promise.reject(new Error("a worker did not answer")),
      reportParts: () => Promise.reject(new Error("a worker did not answer")),
    };
    const report: ServedReport = { merge: () => ({}), render: () => {} };
    const server = buildOpsServer(
      createOpsHandler({
        source: failing,
        reports: new Map([["/deprecations", report]]),
        isReady: () => true,
        logger: gw.gateway.logger,
      }),
      gw.config.server,
    );
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const origin = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    try {
      for (const [path, message] of [
        ["/metrics", "Metrics could not be collected"],
        ["/deprecations", "The report could not be collected"],
      ] as const) {
        const answer = await request(`${origin}${path}`);
        assert.equal(answer.status, 500, path);
        assert.deepEqual(answer.json(), { code: "INTERNAL_ERROR", message, status: 500 });
        assert.ok(gw.gateway.api.validateError(answer.json()), answer.body);
      }
    } finally {
      server.close();
    }
  });
});

describe("health", () => {
  test("/healthz stays 200 while /readyz turns 503 once the gateway drains", async () => {
    const backend = await startPetBackend();
    const gw = await startGateway({ upstreamUrl: backend.url, keys });
    try {
      assert.equal((await request(`${gw.opsUrl}/healthz`)).status, 200);
      const ready = await request(`${gw.opsUrl}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(ready.json(), { status: "ready" });
      gw.gateway.drain();
      const draining = await request(`${gw.opsUrl}/readyz`);
      assert.equal(draining.status, 503);
      assert.deepEqual(draining.json(), { status: "not ready" });
      assert.equal((await request(`${gw.opsUrl}/healthz`)).status, 200);
      // Still serving meanwhile, telling clients to go elsewhere next time.
      const answer = await request(`${gw.url}/pets`, { key: acme });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.connection, "close");
    } finally {
      await gw.close();
      await backend.close();
    }
  });

  test("whether the backend is reachable is known before the first request and followed while no traffic comes", async () => {
    const backend = await startProgrammableBackend();
    const gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { upstream: { probeIntervalMs: 100 } },
    });
    try {
      await eventually("gateway_upstream_up reads 1 with no request sent", async () => {
        return sampleValue(await scrape(gw), "gateway_upstream_up") === 1;
      });
      // A connect, not a request: the backend has nothing to answer or log.
      assert.equal(backend.requests.length, 0);
      await backend.close();
      await eventually("gateway_upstream_up reads 0 once the idle backend went away", async () => {
        return sampleValue(await scrape(gw), "gateway_upstream_up") === 0;
      });
      assert.equal((await request(`${gw.opsUrl}/readyz`)).status, 200);
    } finally {
      await gw.close();
      await backend.close();
    }
  });

  test("while requests flow the probe stays away: the backend sees only the connections requests use", async () => {
    let connections = 0;
    const backend = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end("[]");
    });
    backend.on("connection", () => connections++);
    backend.listen(0, "127.0.0.1");
    await once(backend, "listening");
    const url = `http://127.0.0.1:${(backend.address() as net.AddressInfo).port}/v1`;
    const gw = await startGateway({
      upstreamUrl: url,
      keys,
      config: { upstream: { probeIntervalMs: 100 } },
    });
    try {
      await eventually("the start-up probe", () => connections >= 1);
      const before = connections;
      // One request at a time for ten probe intervals: one kept-alive backend connection serves them.
      const until = performance.now() + 1000;
      let sent = 0;
      while (performance.now() < until) {
        assert.equal((await request(`${gw.url}/pets`, { key: acme })).status, 200);
        sent++;
      }
      assert.ok(sent > 20, `only ${sent} requests in a second`);
      assert.ok(
        connections - before <= 2,
        `${connections - before} new backend connections while requests flowed`,
      );
    } finally {
      await gw.close();
      backend.closeAllConnections();
      backend.close();
    }
  });

  test("a backend that is down is a gauge, not unreadiness", async () => {
    const backend = await startProgrammableBackend();
    const url = backend.url;
    await backend.close();
    const gw = await startGateway({ upstreamUrl: url, keys });
    try {
      assert.equal((await request(`${gw.url}/pets`, { key: acme })).status, 502);
      assert.equal(sampleValue(await scrape(gw), "gateway_upstream_up"), 0);
      assert.equal((await request(`${gw.opsUrl}/readyz`)).status, 200);
    } finally {
      await gw.close();
    }
  });
});

describe("the gateway program", () => {
  test("a clean stop loses no access line: every request sent before SIGTERM is on stdout", async (t) => {
    const program = await startGatewayProgram(
      { keys: false, config: { server: { shutdownDrainMs: 50 } } },
      t,
    );
    const [line = ""] = program.stderr().split("\n");
    const match = /Bearer (\S+)' (http:\/\/localhost:\d+)\/v1\/pets/.exec(line);
    assert.ok(match, line);
    const origin = (match[2] as string).replace("localhost", "127.0.0.1");
    const sent = 300;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    await Promise.all(
      Array.from(
        { length: sent },
        (_, i) =>
          new Promise<void>((resolve, reject) => {
            http
              .get(
                `${origin}/v1/pets/${(i % 3) + 1}`,
                { agent, headers: { authorization: `Bearer ${match[1]}`, "x-request-id": `flush-${i}` } },
                (res) => res.resume().on("end", resolve),
              )
              .on("error", reject);
          }),
      ),
    );
    agent.destroy();
    const code = await program.stop("SIGTERM");
    assert.equal(code, 0);
    assert.deepEqual(program.notJson, [], "every stdout line is JSON");
    const lines = program.lines;
    const ids = new Set(lines.filter((l) => l.msg === "request").map((l) => String(l.reqId)));
    assert.equal(ids.size, sent);
    for (let i = 0; i < sent; i++) assert.ok(ids.has(`flush-${i}`), `flush-${i}`);
    assert.equal(lines.at(-1)?.msg, "stopped");
    assert.ok(!program.raw.join("\n").includes(String(match[1])), "the demo key reached the log");
  });
});

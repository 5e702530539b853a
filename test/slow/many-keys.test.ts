// 100,000 keys: a key file of that size loads, and a key is found in it as fast as in a file of
// one (per request over HTTP, and the authentication phase alone). It measures, so it runs in
// test:slow, alone; what it asserts is what test/inbound.test.ts asserts of every key file.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import pino from "pino";
import auth, { type AuthOptions } from "../../policies/auth/index.ts";
import { createMetrics } from "../../src/metrics.ts";
import type { Operation } from "../../src/openapi.ts";
import { newExchange } from "../../src/pipeline/exchange.ts";
import { contractAnswer } from "../fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "../fixtures/programmable-backend.ts";
import { startGateway, type TestGateway } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { type ApiKey, sha256, writeKeysFile } from "../support/keys.ts";
import { sampleValue, scrape } from "../support/metrics.ts";

const started: TestGateway[] = [];
const metricsTexts: string[] = [];

describe("100,000 keys", () => {
  let backend: ProgrammableBackend;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
  });
  after(() => backend.close());

  test("a 100,000-key file loads and a key is found in it like in a 1-key file", async (t) => {
    const needle = writeKeysFile(["needle"]);
    const key = needle.keys[0] as ApiKey;
    const file = join(dirname(needle.file), "many.json");
    const random = randomBytes(32 * 100_000).toString("hex");
    const entries = Array.from({ length: 100_000 }, (_, i) => ({
      consumer: `consumer-${i % 1000}`,
      sha256: random.slice(i * 64, i * 64 + 64),
    }));
    entries.splice(54_321, 0, { consumer: "needle", sha256: sha256(key.key) });
    writeFileSync(file, JSON.stringify({ keys: entries }));
    const loadStarted = performance.now();
    const many = await startGateway({
      upstreamUrl: backend.url,
      config: { policies: { auth: { keysFile: file } } },
    });
    started.push(many);
    const loadMs = performance.now() - loadStarted;
    const one = await startGateway({ upstreamUrl: backend.url, keys: needle });
    started.push(one);
    try {
      assert.equal(sampleValue(await scrape(many), "gateway_api_keys"), 100_001);
      assert.equal((await request(`${many.url}/pets`, { key: key.key })).status, 200);
      assert.equal(backend.requests.at(-1)?.headers["x-consumer"], "needle");

      // Keep-alive requests, alternating rounds so that neither side gets the warmer process.
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const round = async (gw: TestGateway, count: number) => {
        const started = performance.now();
        for (let i = 0; i < count; i++) {
          const status = await new Promise<number>((resolve, reject) => {
            http
              .get(`${gw.url}/pets`, { agent, headers: { authorization: `Bearer ${key.key}` } }, (res) => {
                res.resume();
                res.on("end", () => resolve(res.statusCode ?? 0));
              })
              .on("error", reject);
          });
          assert.equal(status, 200);
        }
        return (performance.now() - started) / count;
      };
      const times = { one: [] as number[], many: [] as number[] };
      await round(one, 20);
      await round(many, 20);
      for (let r = 0; r < 3; r++) {
        times.one.push(await round(one, 100));
        times.many.push(await round(many, 100));
      }
      agent.destroy();
      const median = (values: number[]) => values.sort((a, b) => a - b)[1] ?? Number.NaN;
      const perRequest = { one: median(times.one), many: median(times.many) };
      t.diagnostic(
        `100,001 keys loaded with the gateway in ${Math.round(loadMs)} ms; per request (HTTP round trip, ` +
          `lookup included): 1 key ${(perRequest.one * 1000).toFixed(0)} µs, 100,001 keys ` +
          `${(perRequest.many * 1000).toFixed(0)} µs (ratio ${(perRequest.many / perRequest.one).toFixed(2)})`,
      );
      // The authentication phase alone, called directly: hashing the key and the table lookup.
      const phaseTime = async (keysFile: string) => {
        const instance = auth.create(
          {
            keysFile,
            reloadIntervalMs: 4000,
            consumerHeader: "x-consumer",
            upstreamAuthorization: "pass",
            upstreamCredentialEnv: undefined,
          } satisfies AuthOptions,
          {
            api: many.gateway.api,
            logger: pino({ level: "silent" }),
            environment: "production",
            now: Date.now,
            responseHeaders: () => [],
          },
          (auth.metrics as NonNullable<typeof auth.metrics>)(
            createMetrics({ defaultMetrics: false }).registry,
          ),
        );
        try {
          const onRequest = instance.forOperation(
            many.gateway.api.operation("listPets") as Operation,
          )?.onRequest;
          assert.ok(onRequest);
          const exchange = newExchange(
            { url: "/v1/pets", headers: { authorization: `Bearer ${key.key}` } } as IncomingMessage,
            {} as ServerResponse,
            "id-1",
            "",
          );
          const rounds = 20_000;
          const started = performance.now();
          for (let i = 0; i < rounds; i++) onRequest(exchange);
          const microseconds = ((performance.now() - started) / rounds) * 1000;
          assert.equal(exchange.consumer, "needle");
          return microseconds;
        } finally {
          await instance.close?.();
        }
      };
      const oneFile = needle.file;
      await phaseTime(oneFile);
      const phase = { one: await phaseTime(oneFile), many: await phaseTime(file) };
      t.diagnostic(
        `the authentication phase alone (hash + lookup): 1 key ${phase.one.toFixed(2)} µs, ` +
          `100,001 keys ${phase.many.toFixed(2)} µs`,
      );
    } finally {
      for (const gw of [many, one]) {
        metricsTexts.push((await request(`${gw.opsUrl}/metrics`)).body);
        await gw.close();
      }
    }
  });
});

test("no key and no full digest appears in any log line or /metrics output", () => {
  const logs = started.flatMap((gw) => gw.logs.raw);
  assert.equal(metricsTexts.length, started.length);
  const needle = started[1]?.keys?.key as string;
  for (const [where, texts] of Object.entries({ logs, "/metrics": metricsTexts })) {
    for (const text of texts) {
      assert.ok(!text.includes(needle), `a key in ${where}: ${text.slice(0, 300)}`);
      // No run of 64 hex digits at all: that covers the 100,001 digests of the key file.
      const digest = /[0-9a-f]{64}/i.exec(text);
      assert.equal(digest, null, `a digest in ${where}: ${text.slice(0, 300)}`);
      assert.doesNotMatch(text, /test_[A-Za-z0-9_-]{32}/, `something key-shaped in ${where}`);
    }
  }
});

// No request ends the gateway process, on either port: the program as `npm start` runs it takes
// targets that new URL() rejects and a few hundred seeded random requests (FC_SEED=<n> replays a
// run), then still answers /healthz, with no `fatal error` line.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { boundedConfig } from "../support/config-file.ts";
import { eventually } from "../support/eventually.ts";
import { startGatewayProgram } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { fatalLines, type GatewayProcess } from "../support/processes.ts";
import { rawExchange } from "../support/raw-socket.ts";

const SEED = Number(process.env.FC_SEED ?? 20_261_123);
const ABSOLUTE_FORM = [
  "http://a:99999/metrics",
  "http://[/",
  "http://%zz/healthz",
  "http://1.2.3.4.5/readyz",
];
/** The demo, as `npm start` runs it, with every worker listening. */
async function startDemo(workers: number): Promise<GatewayProcess> {
  const gw = await startGatewayProgram({
    keys: false,
    config: boundedConfig(),
    env: { HOST: "127.0.0.1", WORKERS: String(workers) },
  });
  await eventually(
    "every worker listening",
    () => workers === 1 || gw.lines.filter((line) => line.msg === "worker listening").length >= workers,
    20_000,
  );
  return gw;
}

// ---------------------------------------------------------------------------------------------
// Requests as a hostile client writes them.
const text = (maxLength: number) => fc.string({ unit: "binary", maxLength });
const host = fc.oneof(
  fc.constantFrom(
    "a",
    "[",
    "[::1",
    "[::1]",
    "%zz",
    "1.2.3.4.5",
    "x y",
    "",
    "ex\u0000ample",
    "user@h",
    "999.1.1.1",
  ),
  text(20),
);
const port = fc.oneof(fc.constantFrom("", ":99999", ":-1", ":abc", ":", ":65536", ":0", ":9090"), text(6));
const target = fc.oneof(
  fc
    .tuple(
      fc.constantFrom("http://", "https://", "HTTP://", "ftp://", "//"),
      host,
      port,
      fc.constantFrom("/metrics", "/healthz", "/readyz", "/v1/pets", "", "/deprecations?format=csv"),
    )
    .map((parts) => parts.join("")),
  fc
    .tuple(fc.constantFrom("/healthz", "/metrics", "/v1/pets", "/", "/deprecations"), text(40))
    .map(([path, tail]) => path + tail),
  fc
    .tuple(
      fc.constantFrom("/", "/healthz?", "/v1/pets?"),
      fc.constantFrom("%zz", "%", "[", "]", "%00", "\u0000", "\t", "\u007f", "\u00ff", "&&==", "a=1&a=2"),
    )
    .map(([a, b]) => a + b),
  fc.integer({ min: 100, max: 20_000 }).map((n) => `/${"a".repeat(n)}`),
  fc.constantFrom("*", "", "healthz", "/healthz#frag", "/%68ealthz"),
  text(60),
);
const method = fc.oneof(
  fc.constantFrom(
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "DELETE",
    "OPTIONS",
    "PATCH",
    "TRACE",
    "CONNECT",
    "PROPFIND",
    "get",
    "FOO",
    "",
  ),
  text(10),
);
const headerName = fc.oneof(
  fc.constantFrom(
    "Host",
    "Content-Length",
    "Transfer-Encoding",
    "Connection",
    "Expect",
    "Upgrade",
    "Accept",
    "X-Request-Id",
  ),
  text(12),
);
const headers = fc.array(fc.tuple(headerName, text(40)), { maxLength: 6 });
const version = fc.constantFrom("HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.1 x", "");
const hostileRequest = fc.record({
  ops: fc.boolean(),
  bytes: fc
    .tuple(method, target, version, fc.boolean(), headers)
    .map(
      ([m, t, v, withHost, list]) =>
        `${m} ${t} ${v}\r\n${withHost ? "Host: gw\r\n" : ""}${list.map(([n, value]) => `${n}: ${value}\r\n`).join("")}\r\n`,
    ),
});

/** Sends seeded random requests to both ports, `parallel` at a time; every one is answered or closed. */
async function sendHostile(gw: GatewayProcess, runs: number, seed: number, parallel = 25): Promise<number> {
  let answered = 0;
  const ports = { ops: Number(new URL(gw.opsUrl).port), public: gw.port };
  const cases = fc.sample(hostileRequest, { seed, numRuns: runs });
  for (let start = 0; start < cases.length; start += parallel) {
    await Promise.all(
      cases.slice(start, start + parallel).map(async ({ ops, bytes }, offset) => {
        const outcome = await rawExchange(ops ? ports.ops : ports.public, bytes, { waitMs: 8000 });
        const where = `case ${start + offset} (FC_SEED=${seed}) on the ${ops ? "ops" : "public"} port: ${JSON.stringify(bytes.slice(0, 200))}`;
        assert.ok(outcome.closed, `held open: ${where}`);
        assert.ok(
          outcome.text === "" || /^HTTP\/1\.1 \d{3} /.test(outcome.text),
          `not HTTP: ${where}: ${outcome.text.slice(0, 100)}`,
        );
        if (outcome.responses.length > 0) answered++;
      }),
    );
    assert.deepEqual(fatalLines(gw), [], `after case ${start + parallel}`);
  }
  return answered;
}

for (const [workers, runs] of [
  [1, 300],
  [2, 60],
] as const) {
  describe(`WORKERS=${workers}: no request ends the gateway process`, () => {
    let gw: GatewayProcess;
    before(async () => {
      gw = await startDemo(workers);
    });
    after(async () => {
      await gw.stop("SIGKILL");
    });

    test("a target that new URL() rejects gets 400 on the ops port, and the process goes on", async () => {
      for (const target of ABSOLUTE_FORM) {
        const outcome = await rawExchange(
          Number(new URL(gw.opsUrl).port),
          `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
        );
        assert.equal(outcome.responses[0]?.status, 400, `${target}: ${outcome.text}`);
        assert.equal(gw.child.exitCode, null, `the process exited after ${target}`);
      }
      assert.equal((await request(`${gw.opsUrl}/healthz`)).status, 200);
      assert.deepEqual(fatalLines(gw), []);
    });

    test(`${runs} seeded random requests on both ports: each answered or closed, no fatal error, /healthz still 200`, async () => {
      const answered = await sendHostile(gw, runs, SEED + workers);
      // Most such bytes are refused with an answer: the requests did reach the gateway's code.
      assert.ok(answered > runs / 2, `only ${answered} of ${runs} answered`);
      assert.equal(gw.child.exitCode, null, "the process is alive");
      assert.equal((await request(`${gw.opsUrl}/healthz`)).status, 200);
      assert.equal((await request(`${gw.opsUrl}/metrics`)).status, 200);
      assert.deepEqual(fatalLines(gw), []);
      if (workers > 1) {
        const exits = gw.lines.filter((line) => line.msg === "worker exited; starting a new one");
        assert.deepEqual(exits, [], "no worker died either");
      }
    });

    test("then SIGTERM still stops it cleanly", async () => {
      assert.equal(await gw.stop("SIGTERM"), 0);
      assert.deepEqual(fatalLines(gw), []);
    });
  });
}

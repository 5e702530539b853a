// The ops port is the edge too: it reads a request as the public port does, a bug behind an
// endpoint is a 500 and a log line rather than the end of the process, and what operators
// point at it (the kubelet, Prometheus, the image's HEALTHCHECK) gets what it expects.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import policies from "../policies/index.ts";
import { definePolicy } from "../src/policy.ts";
import { contractAnswer } from "./fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { watchForCrashes } from "./support/crashes.ts";
import { eventually } from "./support/eventually.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { parsePrometheus } from "./support/metrics.ts";
import { childEnv, PROJECT_ROOT } from "./support/program.ts";
import { rawExchange } from "./support/raw-socket.ts";

const keys = writeKeysFile(["acme"]);
/** Targets that `new URL()` rejects, and one it reads. */
const ABSOLUTE_FORM = [
  "http://a:99999/metrics",
  "http://[/",
  "http://%zz/healthz",
  "http://1.2.3.4.5/readyz",
  "http://x/healthz",
];

// A policy with bugs in what the ops port calls: each part of a report.
const BROKEN = new Error("a bug in a policy's ops code");
const broken = (): never => {
  throw BROKEN;
};
const faultyOps = definePolicy({
  name: "faultyOps",
  optionsSchema: { type: "object", additionalProperties: false, default: {} },
  opsReports: {
    "/broken/collect": { merge: (parts) => parts[0], render: (_report, _query, res) => res.end("{}") },
    "/broken/render": { merge: (parts) => parts[0], render: broken },
    "/broken/render-late": {
      merge: (parts) => parts[0],
      render: (_report, _query, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.write("{");
        throw BROKEN;
      },
    },
  },
  create: () => ({
    forOperation: () => undefined,
    collectReports: {
      "/broken/collect": broken,
      "/broken/render": () => ({}),
      "/broken/render-late": () => ({}),
    },
  }),
});

const opsPort = (gw: TestGateway) => Number(new URL(gw.opsUrl).port);
const publicPort = (gw: TestGateway) => Number(new URL(gw.origin).port);

describe("the ops port reads requests as the public port does", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  const crashes = watchForCrashes();
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    gw = await startGateway({ upstreamUrl: backend.url, keys });
  });
  after(async () => {
    await gw.close();
    await backend.close();
    crashes.stop();
    assert.deepEqual(crashes.crashes, []);
  });

  test("an absolute-form target, even one new URL() rejects, gets 400 BAD_PATH on both ports and the ops port goes on", async () => {
    for (const target of ABSOLUTE_FORM) {
      for (const port of [opsPort(gw), publicPort(gw)]) {
        const outcome = await rawExchange(
          port,
          `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
        );
        const [answer] = outcome.responses;
        assert.equal(answer?.status, 400, `${target} on ${port}: ${outcome.text}`);
        const error = JSON.parse(answer.body) as { code: string };
        assert.equal(error.code, "BAD_PATH");
        assert.ok(gw.gateway.api.validateError(error), answer.body);
      }
    }
    assert.equal((await request(`${gw.opsUrl}/healthz`)).status, 200);
    assert.deepEqual(crashes.crashes, []);
  });

  test("a head or target the public port refuses is refused alike on the ops port", async () => {
    const heads = [
      "GET /healthz HTTP/1.1\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
      "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n",
      "GET /./healthz HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET //healthz HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /%68ealthz HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /healthz;a=b HTTP/1.1\r\nHost: x\r\n\r\n",
      "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /healthz?a=1&a=2 HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /healthz?a=%zz HTTP/1.1\r\nHost: x\r\n\r\n",
    ];
    for (const bare of heads) {
      const head = bare.replace(/\r\n\r\n$/, "\r\nConnection: close\r\n\r\n");
      const publicAnswer = (await rawExchange(publicPort(gw), head.replace("/healthz", "/v1/pets")))
        .responses[0];
      const opsAnswer = (await rawExchange(opsPort(gw), head)).responses[0];
      const code = (answer: typeof opsAnswer) => answer && [answer.status, JSON.parse(answer.body).code];
      assert.deepEqual(code(opsAnswer), code(publicAnswer), JSON.stringify(head));
      assert.ok(opsAnswer && opsAnswer.status >= 400 && opsAnswer.status < 500, JSON.stringify(head));
    }
  });

  test("the report's options come from the decoded query: ?format=csv is read, a format given twice is refused", async () => {
    const csv = await request(`${gw.opsUrl}/deprecations?format=csv`);
    assert.equal(csv.status, 200);
    assert.match(String(csv.headers["content-type"]), /^text\/csv/);
    const spelled = await request(`${gw.opsUrl}/deprecations?%66ormat=c%73v`);
    assert.match(String(spelled.headers["content-type"]), /^text\/csv/);
    const twice = await request(`${gw.opsUrl}/deprecations?format=csv&format=json`);
    assert.equal(twice.status, 400);
    assert.equal(twice.json<{ code: string }>().code, "DUPLICATE_PARAMETER");
    const broken = await request(`${gw.opsUrl}/deprecations?format=%zz`);
    assert.equal(broken.status, 400);
    assert.equal(broken.json<{ code: string }>().code, "BAD_REQUEST");
  });
});

describe("what operators point at the ops port", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    gw = await startGateway({ upstreamUrl: backend.url, keys });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("the kubelet's liveness and readiness probes get 200 with the status as JSON", async () => {
    for (const [path, status] of [
      ["/healthz", "ok"],
      ["/readyz", "ready"],
    ]) {
      // What kube-probe 1.31 sends for an httpGet probe, byte for byte apart from the address.
      const outcome = await rawExchange(
        opsPort(gw),
        `GET ${path} HTTP/1.1\r\nHost: 10.244.1.17:9090\r\nUser-Agent: kube-probe/1.31\r\nAccept: */*\r\nConnection: close\r\n\r\n`,
      );
      const [answer] = outcome.responses;
      assert.equal(answer?.status, 200, outcome.text);
      assert.equal(answer.headers["content-type"], "application/json");
      assert.deepEqual(JSON.parse(answer.body), { status });
      assert.ok(outcome.closed, "Connection: close is honoured");
    }
  });

  test("GET / lists the port's endpoints as JSON, the policies' reports included", async () => {
    const answer = await request(`${gw.opsUrl}/`);
    assert.equal(answer.status, 200);
    assert.equal(answer.headers["content-type"], "application/json");
    assert.deepEqual(JSON.parse(answer.body), {
      endpoints: ["/", "/contract/violations", "/deprecations", "/healthz", "/metrics", "/readyz", "/usage"],
    });
  });

  test("a Prometheus 3 scrape gets 200 and OpenMetrics, as it asks", async () => {
    const outcome = await rawExchange(
      opsPort(gw),
      "GET /metrics HTTP/1.1\r\nHost: 10.244.1.17:9090\r\nUser-Agent: Prometheus/3.5.0\r\n" +
        "Accept: application/openmetrics-text;version=1.0.0;escaping=allow-utf-8,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n" +
        "Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n",
      { waitMs: 1000 },
    );
    const [answer] = outcome.responses;
    assert.equal(answer?.status, 200, outcome.text.slice(0, 300));
    assert.equal(
      answer.headers["content-type"],
      "application/openmetrics-text; version=1.0.0; charset=utf-8",
    );
    assert.match(answer.body, /# EOF\n$/);
    const samples = parsePrometheus(answer.body);
    assert.ok(samples.some((sample) => sample.name === "nodejs_version_info"));
  });

  test("the Docker image's HEALTHCHECK command, run as the Dockerfile has it, exits 0, and 1 where /healthz is not", async () => {
    const dockerfile = readFileSync(join(PROJECT_ROOT, "Dockerfile"), "utf8");
    const command = /HEALTHCHECK[^\n]*\\\n\s*CMD (\[.*\])/.exec(dockerfile)?.[1];
    assert.ok(command, "the Dockerfile has an exec-form HEALTHCHECK");
    const [program, ...args] = JSON.parse(command) as string[];
    // No Node process per check: bash with its own TCP redirection, as the slim image has it.
    assert.equal(program, "bash");
    const check = (port: number) =>
      promisify(execFile)("bash", args, {
        env: { ...childEnv(), OPS_PORT: String(port) },
        timeout: 10_000,
      });
    // Rejects, with its exit code, unless it exits 0.
    await check(opsPort(gw));
    // The public port has no /healthz: a check that passed there would pass anywhere.
    await assert.rejects(check(publicPort(gw)), { code: 1 });
  });
});

describe("a bug behind an ops endpoint", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  const crashes = watchForCrashes();
  before(async () => {
    backend = await startProgrammableBackend();
    gw = await startGateway({
      upstreamUrl: backend.url,
      policies: [...policies, faultyOps],
      keys,
    });
  });
  after(async () => {
    await gw.close();
    await backend.close();
    crashes.stop();
  });

  test("answers 500 INTERNAL_ERROR with the Error object and no stack, logs 'ops endpoint failed', and the port goes on", {
    timeout: 20_000,
  }, async () => {
    for (const path of ["/broken/collect", "/broken/render"]) {
      const answer = await request(`${gw.opsUrl}${path}`);
      assert.equal(answer.status, 500, path);
      const error = answer.json<{ code: string; message: string; status: number }>();
      assert.equal(error.code, "INTERNAL_ERROR");
      assert.ok(gw.gateway.api.validateError(error), answer.body);
      assert.doesNotMatch(answer.body, /a bug in a policy|\bat /);
      const line = await eventually(`the log line for ${path}`, () =>
        gw.logs.messages("ops endpoint failed").find((entry) => entry.endpoint === path),
      );
      assert.equal(line.level, "error");
      assert.match(JSON.stringify(line.error), /a bug in a policy's ops code/);
    }
    // Half an answer already on the wire is cut, never passed off as whole.
    await assert.rejects(request(`${gw.opsUrl}/broken/render-late`));
    assert.equal((await request(`${gw.opsUrl}/healthz`)).status, 200);
    assert.deepEqual(crashes.crashes, []);
  });
});

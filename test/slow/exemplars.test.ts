// Exemplars through a process group: the gateway as `npm start` runs it with two workers and
// tracing on. A scrape that asks for OpenMetrics (as Prometheus does) gets both workers' figures
// merged, with the trace id of a traced request on the request-duration buckets, each one a trace
// the collector received; Prometheus' own OpenMetrics parser reads it; and the Prometheus text of
// the next scrape is as before, every counter still named with _total.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type OtlpReceiver, startOtlpReceiver } from "../fixtures/otlp-receiver.ts";
import { eventually } from "../support/eventually.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { parsePrometheus, sampleValue } from "../support/metrics.ts";
import {
  type BackendProcess,
  findProgram,
  type GatewayProcess,
  startDemoBackendProcess,
  startGatewayProcess,
} from "../support/processes.ts";

const PROMETHEUS_ACCEPT =
  "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
const REQUESTS = 400;
const promtool = findProgram("promtool");
const noPromtool = promtool ? false : "promtool not found: apt-get install prometheus (see CONTRIBUTING)";
const directory = mkdtempSync(join(tmpdir(), "petstore-exemplars-"));
const { file: keysFile, key } = writeKeysFile(["acme"], directory);

/** Every sample line of an OpenMetrics text with a timestamp, as promtool's backfill asks of its input. */
function stamped(open: string, seconds: number): string {
  return open
    .split("\n")
    .map((line) => {
      if (line === "" || line.startsWith("#")) return line;
      const exemplar = line.indexOf(" # {");
      return exemplar === -1
        ? `${line} ${seconds}`
        : `${line.slice(0, exemplar)} ${seconds}${line.slice(exemplar)}`;
    })
    .join("\n");
}

describe("exemplars with two workers", () => {
  let backend: BackendProcess;
  let receiver: OtlpReceiver;
  let gw: GatewayProcess;
  let open: string;
  before(async () => {
    backend = await startDemoBackendProcess();
    receiver = await startOtlpReceiver();
    gw = await startGatewayProcess({
      API_KEYS_FILE: keysFile,
      UPSTREAM_URL: backend.url,
      WORKERS: "2",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    });
    await eventually(
      "both workers listening",
      () => gw.lines.filter((line) => line.msg === "worker listening").length === 2,
      20_000,
    );
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    const paths = ["/v1/pets", "/v1/pets/1", "/v1/pets?limit=3", "/v1/pets/999"];
    await Promise.all(
      Array.from(
        { length: REQUESTS },
        (_, i) =>
          new Promise<void>((resolve, reject) => {
            http
              .get(
                `${gw.origin}${paths[i % paths.length]}`,
                { agent, headers: { authorization: `Bearer ${key}` } },
                (res) => res.resume().on("end", resolve),
              )
              .on("error", reject);
          }),
      ),
    );
    agent.destroy();
    await eventually(
      "every request's span exported",
      () => receiver.counts().serverSpans >= REQUESTS,
      15_000,
    );
    const answer = await request(`${gw.opsUrl}/metrics`, { headers: { accept: PROMETHEUS_ACCEPT } });
    assert.match(String(answer.headers["content-type"]), /^application\/openmetrics-text; version=1\.0\.0/);
    open = answer.body;
  });
  after(async () => {
    await gw?.stop();
    await receiver?.close();
    await backend?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  test("both workers' requests are counted, and the buckets carry trace ids the collector received", () => {
    // The merged count: every request, whichever worker served it.
    const counts = open
      .split("\n")
      .filter((line) => line.startsWith("http_server_request_duration_seconds_count{"))
      .reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
    assert.equal(counts, REQUESTS);
    const exemplars = [...open.matchAll(/# \{trace_id="([0-9a-f]{32})"\} /g)].map((match) => match[1]);
    assert.ok(exemplars.length >= 4, `${exemplars.length} exemplars`);
    const received = new Set(receiver.spans.filter((span) => span.kind === 2).map((span) => span.traceId));
    for (const trace of exemplars) assert.ok(received.has(trace as string), `${trace} was never exported`);
    // Which worker served each: the access line of the trace names its process.
    const pids = new Set(
      gw.lines.filter((line) => exemplars.includes(line.trace_id as string)).map((line) => line.pid),
    );
    // Each bucket's newest exemplar, whichever worker has it: with both serving, both have some.
    assert.equal(pids.size, 2, `exemplars from ${pids.size} worker(s)`);
  });

  test("Prometheus' OpenMetrics parser reads the scrape", { skip: noPromtool }, () => {
    const file = join(directory, "scrape.om");
    writeFileSync(file, stamped(open, Math.floor(Date.now() / 1000)));
    const run = spawnSync(
      promtool as string,
      ["tsdb", "create-blocks-from", "openmetrics", file, join(directory, "blocks")],
      { encoding: "utf8" },
    );
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.doesNotMatch(run.stdout + run.stderr, /error|expected/i);
  });

  test("the Prometheus text after it keeps every counter's name and passes promtool check metrics", async () => {
    const text = await request(`${gw.opsUrl}/metrics`);
    assert.match(String(text.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
    assert.doesNotMatch(text.body, /# \{/);
    assert.match(text.body, /^# TYPE gateway_trace_spans_dropped_total counter$/m);
    assert.equal(sampleValue(parsePrometheus(text.body), "gateway_trace_spans_dropped_total"), 0);
    if (promtool) {
      const check = spawnSync(promtool, ["check", "metrics"], { input: text.body, encoding: "utf8" });
      assert.equal(check.status, 0, check.stdout + check.stderr);
    }
  });
});

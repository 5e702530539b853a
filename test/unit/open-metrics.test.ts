// /metrics as OpenMetrics, for a scrape that asks for it: the request-duration histogram's buckets
// carry the trace id of a traced request, a process's counters keep their names in the Prometheus
// text it writes next, and a cluster's workers merge with the newest exemplar of each bucket.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { MetricsPart } from "../../src/cluster/protocol.ts";
import { createMetrics } from "../../src/metrics.ts";
import { asksForOpenMetrics, openMetricsText } from "../../src/open-metrics.ts";

const TRACE_A = "4bf92f3577b34da6a3ce929d0e0e4736";
const TRACE_B = "0af7651916cd43dd8448eb211c80319c";
const json = async (metrics: ReturnType<typeof createMetrics>) =>
  (await metrics.registry.getMetricsAsJSON()) as unknown as MetricsPart;
const lines = (text: string, pattern: RegExp) => text.split("\n").filter((line) => pattern.test(line));

test("a traced request's trace id is the exemplar of its duration's bucket, in OpenMetrics only", async () => {
  const metrics = createMetrics({ defaultMetrics: false });
  metrics.observeRequest("listPets", "GET", "200", 0.004, TRACE_A);
  metrics.observeRequest("listPets", "GET", "200", 0.3);
  const open = await openMetricsText([await json(metrics)]);
  assert.deepEqual(lines(open, /# \{/), [
    `http_server_request_duration_seconds_bucket{le="0.005",operation="listPets",http_request_method="GET",http_response_status_code="200"} 1 # {trace_id="${TRACE_A}"} 0.004 ${(lines(open, /# \{/)[0] ?? "").split(" ").at(-1)}`,
  ]);
  assert.ok(open.endsWith("# EOF\n"));
  // The Prometheus text of the same registry has no exemplar.
  assert.doesNotMatch(await metrics.registry.metrics(), /# \{/);
});

test("an OpenMetrics scrape leaves the counters' names as they are for the Prometheus text after it", async () => {
  const metrics = createMetrics({ defaultMetrics: false });
  metrics.traceSpansDropped.inc(3);
  const open = await openMetricsText([await json(metrics)]);
  // OpenMetrics names the family without _total and the sample with it, once.
  assert.match(open, /^# TYPE gateway_trace_spans_dropped counter$/m);
  assert.match(open, /^gateway_trace_spans_dropped_total 3$/m);
  assert.doesNotMatch(open, /_total_total/);
  // prom-client's own way (switching the registry) would leave this as gateway_trace_spans_dropped.
  const text = await metrics.registry.metrics();
  assert.match(text, /^# TYPE gateway_trace_spans_dropped_total counter$/m);
  assert.match(text, /^gateway_trace_spans_dropped_total 3$/m);
});

test("workers' parts merge into one OpenMetrics text: sums, counters once, the newest exemplar of each bucket", async () => {
  const [one, two] = [createMetrics({ defaultMetrics: false }), createMetrics({ defaultMetrics: false })];
  one.observeRequest("listPets", "GET", "200", 0.004, TRACE_A);
  one.traceSpansDropped.inc(2);
  await new Promise((done) => setTimeout(done, 5));
  two.observeRequest("listPets", "GET", "200", 0.003, TRACE_B);
  two.observeRequest("getPet", "GET", "200", 0.2);
  two.traceSpansDropped.inc(5);
  const open = await openMetricsText([await json(one), await json(two)]);
  const exemplars = lines(open, /# \{/);
  assert.equal(exemplars.length, 1, exemplars.join("\n"));
  assert.match(
    exemplars[0] ?? "",
    /le="0\.005".* 2 # \{trace_id="0af7651916cd43dd8448eb211c80319c"\} 0\.003 /,
  );
  assert.match(open, /^gateway_trace_spans_dropped_total 7$/m);
  assert.match(open, /^# TYPE gateway_trace_spans_dropped counter$/m);
  assert.doesNotMatch(open, /_total_total/);
  assert.match(open, /^http_server_request_duration_seconds_count\{operation="getPet",.*\} 1$/m);
});

test("Prometheus 2 and 3 get OpenMetrics, whatever escaping Prometheus 3 names; curl and browsers get text", () => {
  const asked = {
    // Prometheus 2.x, every scrape.
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1": true,
    // Prometheus 3.x: escaping on the 1.0.0 formats, allow-utf-8 by default, underscores when so configured.
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1": true,
    "application/openmetrics-text;version=1.0.0;escaping=underscores;q=0.5,text/plain;version=0.0.4;q=0.2,*/*;q=0.1": true,
    "application/openmetrics-text; version=1.0.0; Escaping=dots": true,
    // Text preferred, only an older OpenMetrics, anything, nothing.
    "text/plain;version=0.0.4,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5": false,
    "application/openmetrics-text;version=0.0.1": false,
    "*/*": false,
    "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": false,
  };
  for (const [accept, open] of Object.entries(asked)) assert.equal(asksForOpenMetrics(accept), open, accept);
  assert.equal(asksForOpenMetrics(undefined), false);
});

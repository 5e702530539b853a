// What the OpenTelemetry SDK alone costs per traced request (issue 30's target at a ratio of 1.0:
// under 10 % more CPU per request than tracing off): the two spans a proxied GET /v1/pets makes,
// with the same attributes, started and ended through the same tracer, processor and exporter as
// the gateway's (sdkTracer() of src/tracing/index.ts), exported to a live receiver in a process of
// its own (test/fixtures/otlp-receiver.ts), with no gateway around them. Whatever the gateway's own
// code costs comes on top of this figure: if it alone is past the target, no change of the
// gateway's reaches the target with the SDK the issue mandates.
//
//   node scripts/bench/tracing-floor.ts [--rounds 5] [--pairs 50000] [--rate 7000] [--garbage 30000]
//     CPU µs per span pair (user + system, every thread of the process), the median of the rounds:
//     the loop with spans less the same loop without them, each in a fresh process.
//   node scripts/bench/tracing-floor.ts --instructions [--pairs 20000] [--rate 7000] [--garbage 30000]
//     instructions per span pair under valgrind's callgrind instead (the whole process, V8's
//     collector and compiler threads included), after as many pairs of warm-up: repeatable on a
//     busy machine, where the times are not. Needs valgrind; a few minutes.
//
// Pairs are paced at --rate a second (the bench's rate at 1.0 is about 7,000 requests a second), so
// that batches fill and leave as they do behind a loaded gateway. --garbage allocates that many bytes
// of short-lived objects per pair beside the spans, as a list20 request allocates about 30 KB: the
// young generation then fills as fast as in the gateway, and a span held until its batch leaves
// lives through as many scavenges (0 measures the spans in an otherwise idle heap). Each run also
// reports V8's allocated and promoted bytes per pair (--trace-gc-nvp) and what the receiver got: a
// run with a span dropped does not count. The environment's OTEL_* variables reach the SDK as they
// reach the gateway: OTEL_EXPORTER_OTLP_PROTOCOL=http/json measures the JSON exporter,
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE=64 another batch.
//
// --through module drives the gateway's own tracing module (createTracing) instead, on an exchange
// built as the core builds one for a proxied list20 request: startServer, startClient and end, as
// the pipeline calls them; its figure less the SDK's is what the gateway's code adds around the SDK
// (not in it: the exemplar metrics.ts records, the ids in the access line, the traceparent header
// on the backend's request).
//
// --leg tells the parts apart: export (the default) is the whole leg; serialize hands each batch to
// the OTLP exporter's own serializer and sends nothing; spans drops each batch as it comes (what
// is left is the spans' making, their attributes and the batch processor).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { ROOT_CONTEXT, SpanKind, trace } from "@opentelemetry/api";
import { ExportResultCode } from "@opentelemetry/core";
import { JsonTraceSerializer, ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace";
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
} from "@opentelemetry/semantic-conventions";
import { Counter } from "prom-client";
import type { DocumentVersion } from "../../src/document-version.ts";
import { loadApiDescription, type Operation } from "../../src/openapi.ts";
import { type CoreExchange, newExchange } from "../../src/pipeline/exchange.ts";
import { DEFAULT_OPENAPI_FILE } from "../../src/project-files.ts";
import { attributeNameOf, CONSUMER, NOTE_PREFIX, OPERATION_ID } from "../../src/tracing/attributes.ts";
import { exportingProcessor } from "../../src/tracing/export.ts";
import { createTracingWith, sdkTracer, type Tracing } from "../../src/tracing/index.ts";
import { type TracingSettings, tracingSettings } from "../../src/tracing/settings.ts";

const RECEIVER = new URL("../../test/fixtures/otlp-receiver.ts", import.meta.url).pathname;
/** The Node flags npm start runs the gateway with that change what is measured here. */
const NODE_FLAGS = ["--max-semi-space-size=8"];

const { values: options } = parseArgs({
  options: {
    instructions: { type: "boolean", default: false },
    rounds: { type: "string", default: "5" },
    pairs: { type: "string" },
    rate: { type: "string", default: "7000" },
    garbage: { type: "string", default: "30000" },
    leg: { type: "string", default: "export" },
    through: { type: "string", default: "sdk" },
    // Internal: one measured run, in a child process.
    run: { type: "string" },
    receiver: { type: "string" },
  },
});

interface RunResult {
  readonly cpuMicros: number;
  readonly pairs: number;
  readonly dropped: number;
}

/** The attributes a proxied list20 request's spans carry (what the receiver decodes from the gateway's). */
function spanPair(tracer: ReturnType<typeof sdkTracer>["tracer"]): void {
  const server = tracer.startSpan("GET", { kind: SpanKind.SERVER }, ROOT_CONTEXT);
  if (server.isRecording()) server.setAttribute(ATTR_HTTP_REQUEST_METHOD, "GET");
  server.spanContext();
  const client = tracer.startSpan("GET", { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, server));
  if (client.isRecording()) {
    client.setAttributes({
      [ATTR_HTTP_REQUEST_METHOD]: "GET",
      [ATTR_SERVER_ADDRESS]: "127.0.0.1",
      [ATTR_SERVER_PORT]: 47123,
      [ATTR_URL_FULL]: "http://127.0.0.1:47123/v1/pets?limit=20",
    });
  }
  client.spanContext();
  client.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, 200);
  client.end();
  server.setAttributes({
    [ATTR_URL_PATH]: "/v1/pets",
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
    [ATTR_CLIENT_ADDRESS]: "127.0.0.1",
    [ATTR_SERVER_ADDRESS]: "127.0.0.1",
    [ATTR_HTTP_ROUTE]: "/v1/pets",
    [OPERATION_ID]: "listPets",
    [CONSUMER]: "count",
    [NOTE_PREFIX + attributeNameOf("limitAdjusted")]: "defaulted",
  });
  server.updateName("GET /v1/pets");
  server.end();
}

const API = loadApiDescription(DEFAULT_OPENAPI_FILE);
const LIST_PETS = API.operation("listPets") as Operation;
const VERSION = { api: API } as DocumentVersion;
const KEY = "count_0123456789abcdefghijklmnopqrstuvwxyzABCD";

/** A proxied list20 request's exchange, at the point the pipeline opens its server span. */
function listExchange(): CoreExchange {
  const req = {
    url: "/v1/pets",
    method: "GET",
    headers: { host: "127.0.0.1:8080", authorization: `Bearer ${KEY}` },
  } as unknown as IncomingMessage;
  return newExchange(req, {} as ServerResponse, "id", "127.0.0.1");
}

/** The tracing module's calls for one list20 request, with what the pipeline does between them. */
function modulePair(tracing: Tracing, exchange: CoreExchange): void {
  tracing.startServer(exchange);
  exchange.version = VERSION;
  exchange.operation = LIST_PETS;
  exchange.identify("count");
  exchange.notes.limitAdjusted = "defaulted";
  exchange.req.url = "/pets?limit=20";
  tracing.startClient(exchange);
  exchange.upstreamStatus = 200;
  exchange.upstreamEndedAt = performance.now();
  tracing.exemplarOf(exchange);
  tracing.end(exchange, 200, "/v1/pets");
}

/** What a request's other work leaves for the young generation: small objects, dead by the next pair. */
let kept: unknown;
function garbage(bytes: number): void {
  // A {a, b, c} object is 48 bytes and its slot in the array 8 (Node's V8 has no pointer compression).
  const objects = new Array(Math.floor(bytes / 56));
  for (let i = 0; i < objects.length; i++) objects[i] = { a: i, b: bytes, c: objects };
  kept = objects;
}

/**
 * The export leg, whole (--leg export: the gateway's), or cut short to tell its parts apart: the
 * same batch processor handing its batches to an exporter that serializes them as the OTLP
 * exporter does and sends nothing (serialize), or that drops them as they come (spans).
 */
function processorOf(settings: TracingSettings, dropped: Counter): SpanProcessor {
  if (options.leg === "export") return exportingProcessor(settings, { dropped });
  const serializer = settings.protocol === "http/json" ? JsonTraceSerializer : ProtobufTraceSerializer;
  const serialize = options.leg === "serialize";
  return new BatchSpanProcessor({
    exporter: {
      export(spans, done) {
        if (serialize) serializer.serializeRequest(spans);
        done({ code: ExportResultCode.SUCCESS });
      },
      shutdown: () => Promise.resolve(),
    },
    ...settings.batch,
  });
}

/** One measured run, in this (child) process: warm-up, then `pairs` counted. */
async function run(withSpans: boolean, receiverUrl: string): Promise<RunResult> {
  const pairs = Number(options.pairs ?? (options.instructions ? 20_000 : 50_000));
  const rate = Number(options.rate);
  const bytes = Number(options.garbage);
  const dropped = new Counter({ name: "dropped", help: "spans dropped", registers: [] });
  // The environment's OTEL_* (OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_BSP_*) as the gateway would read them.
  const settings = tracingSettings({
    ...process.env,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
    // As the bench's tracing-1.0 gateway samples.
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
    OTEL_TRACES_SAMPLER_ARG: "1",
  });
  if (settings === undefined) throw new Error("no tracing settings");
  const processor = processorOf(settings, dropped);
  const tracing =
    options.through === "module"
      ? createTracingWith(settings, processor, { dropped, upstreamUrl: "http://127.0.0.1:47123/v1" })
      : undefined;
  const sdk = tracing === undefined ? sdkTracer(settings, processor) : undefined;
  const pair = (withSpans: boolean) => {
    if (tracing !== undefined) {
      // The exchange is made in both runs: the module's cost is what tracing adds to it.
      const exchange = listExchange();
      if (withSpans) modulePair(tracing, exchange);
    } else if (withSpans && sdk !== undefined) spanPair(sdk.tracer);
  };
  const oneTick = Math.max(1, Math.ceil(rate / 1000));
  // Paced as requests arrive: every millisecond, what is due (a few at most: a late loop catches up
  // over several turns, leaving the exports their turn, as a busy gateway does).
  const paced = async (n: number) => {
    const started = performance.now();
    let done = 0;
    while (done < n) {
      const due = Math.min(n, Math.floor(((performance.now() - started) * rate) / 1000) + 1);
      for (let i = 0; done < due && i < 4 * oneTick; i++, done++) {
        pair(withSpans);
        garbage(bytes);
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  };
  // The receiver builds its decoder on its first export: a slow first answer, which the queue would
  // not outlast at the rate. One pair goes first, on its own.
  if (withSpans) {
    pair(true);
    await processor.forceFlush();
  }
  await paced(pairs);
  const callgrind = (on: "on" | "off") =>
    options.instructions && execFileSync("callgrind_control", ["-i", on, String(process.pid)]);
  process.stdout.write("counting\n");
  callgrind("on");
  const before = process.cpuUsage();
  await paced(pairs);
  const used = process.cpuUsage(before);
  callgrind("off");
  process.stdout.write("counted\n");
  await (tracing?.shutdown(10_000) ?? sdk?.provider.shutdown());
  void kept;
  return { cpuMicros: used.user + used.system, pairs, dropped: (await dropped.get()).values[0]?.value ?? 0 };
}

async function startReceiver(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [RECEIVER], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout as NonNullable<typeof child.stdout> });
  for await (const line of lines) {
    const said = JSON.parse(line) as { event: string; url: string };
    if (said.event === "listening") return { child, url: said.url };
  }
  throw new Error("the receiver did not start");
}

async function receivedSpans(url: string): Promise<number> {
  return ((await (await fetch(`${url}/counts`)).json()) as { spans: number }).spans;
}

interface Measured extends RunResult {
  readonly instructions: number | undefined;
  readonly allocated: number;
  readonly promoted: number;
  readonly received: number;
}

/** A run in a fresh process (under callgrind with --instructions), with V8's collections traced. */
async function measured(withSpans: boolean, receiverUrl: string): Promise<Measured> {
  const node = [
    ...NODE_FLAGS,
    "--trace-gc-nvp",
    import.meta.filename,
    ...process.argv.slice(2),
    "--run",
    withSpans ? "spans" : "bare",
    "--receiver",
    receiverUrl,
  ];
  const [command, args] = options.instructions
    ? [
        "valgrind",
        [
          "--tool=callgrind",
          "--instr-atstart=no",
          "--callgrind-out-file=/dev/null",
          "--smc-check=all-non-file",
          process.execPath,
          ...node,
        ],
      ]
    : [process.execPath, node];
  const spansBefore = await receivedSpans(receiverUrl);
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk));
  const [code] = (await once(child, "exit")) as [number | null];
  if (code !== 0) throw new Error(`the measured run failed (${code}): ${stderr.slice(-800)}`);
  const result = /^result (.*)$/m.exec(stdout)?.[1];
  if (result === undefined) throw new Error(`no result: ${stdout.slice(-500)}`);
  const lines = stdout.split("\n");
  const counted = lines.slice(lines.indexOf("counting"), lines.indexOf("counted")).join("\n");
  const sum = (name: string) =>
    [...counted.matchAll(new RegExp(` ${name}=(\\d+)`, "g"))].reduce((s, m) => s + Number(m[1]), 0);
  const run = JSON.parse(result) as RunResult;
  const collected = /Collected : (\d+)/.exec(stderr)?.[1];
  return {
    ...run,
    instructions: collected === undefined ? undefined : Number(collected),
    allocated: sum("allocated") / run.pairs,
    promoted: sum("promoted") / run.pairs,
    received: (await receivedSpans(receiverUrl)) - spansBefore,
  };
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

if (options.run !== undefined) {
  const result = await run(options.run === "spans", options.receiver ?? "");
  process.stdout.write(`result ${JSON.stringify(result)}\n`);
} else {
  const receiver = await startReceiver();
  try {
    const rounds = options.instructions ? 1 : Number(options.rounds);
    const costs: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const bare = await measured(false, receiver.url);
      const spans = await measured(true, receiver.url);
      // The first pair, the warm-up and the counted pairs, two spans each (none sent when the leg
      // stops short of export).
      const expected = options.leg === "export" ? 2 + 4 * spans.pairs : 0;
      const valid = spans.dropped === 0 && spans.received === expected;
      const perPair = options.instructions
        ? ((spans.instructions ?? 0) - (bare.instructions ?? 0)) / spans.pairs
        : (spans.cpuMicros - bare.cpuMicros) / spans.pairs;
      if (valid) costs.push(perPair);
      process.stdout.write(
        `${valid ? "" : "VOID (a span was lost): "}round ${round + 1}: ${perPair.toFixed(options.instructions ? 0 : 2)} ${
          options.instructions ? "instructions" : "CPU µs"
        } per span pair; allocated ${spans.allocated.toFixed(0)} bytes/pair (${bare.allocated.toFixed(0)} without spans), promoted ${spans.promoted.toFixed(0)} (${bare.promoted.toFixed(0)}); ${spans.received} spans received of ${expected}, ${spans.dropped} dropped\n`,
      );
    }
    if (costs.length > 0) {
      process.stdout.write(
        `${options.instructions ? "instructions" : "CPU µs"} per span pair: ${median(costs).toFixed(options.instructions ? 0 : 2)} (median of ${costs.length}; ${process.env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf"}, ${options.rate} pairs/s, ${options.garbage} bytes of other garbage per pair)\n`,
      );
    }
  } finally {
    receiver.child.kill();
  }
}

// All the cores of a machine: WORKERS=<n> runs n worker processes behind one public port
// (node:cluster). The primary serves no requests: it runs the ops port, answers /metrics and the
// policies' reports for the whole group by collecting every worker's part over IPC and merging
// them, restarts a worker that dies (backing off when one keeps dying young), and passes a
// graceful shutdown on to the workers.
import cluster, { type Worker } from "node:cluster";
import type { AddressInfo } from "node:net";
import { availableParallelism } from "node:os";
import { AggregatorRegistry, Counter, Gauge, Registry } from "prom-client";
import policies from "../policies/index.ts";
import { validateConfig } from "./config.ts";
import { buildOpsServer, createGateway } from "./gateway.ts";
import { listen } from "./listen.ts";
import { createLogger, type LoggerHandle } from "./logger.ts";
import { createMetrics } from "./metrics.ts";
import type { ApiDescription } from "./openapi.ts";
import { createOpsHandler, type OpsSource } from "./ops.ts";
import type { OpsReport } from "./policy.ts";
import {
  closeAndExit,
  exitOnFatalError,
  logListening,
  type ProcessSetup,
  type Serving,
  serve,
} from "./serve.ts";

/** The environment variable that carries the primary's setup to a worker. */
const WORKER_SETUP = "PETSTORE_GATEWAY_WORKER";
const COLLECT = "petstore-gateway:collect";
const COLLECTED = "petstore-gateway:collected";
const SHUTDOWN = "petstore-gateway:shutdown";
const RELOAD = "petstore-gateway:reload";
/** A worker that does not answer in time is represented by what it said last. */
const COLLECT_TIMEOUT_MS = 3000;
/** A worker that lived at least this long was not crash-looping: restart it at once. */
const STABLE_UPTIME_MS = 10_000;
const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 10_000;

type CollectRequest = { readonly what: "metrics" } | { readonly what: "report"; readonly path: string };
type CollectMessage = CollectRequest & { readonly type: typeof COLLECT; readonly id: number };
interface CollectedMessage {
  readonly type: typeof COLLECTED;
  readonly id: number;
  readonly part?: unknown;
  readonly error?: string;
}
/** One process's metrics as registry.getMetricsAsJSON() gives them (plain data, crosses IPC). */
type MetricsPart = readonly MetricJson[];
interface MetricJson {
  readonly name: string;
  readonly type: string;
  readonly aggregator: string;
  readonly help: string;
  readonly values: readonly unknown[];
}

/** WORKERS as a number of processes: `auto` is one per core the process may use. */
export function workerCount(setting: number | "auto"): number {
  return setting === "auto" ? availableParallelism() : setting;
}

/**
 * How long to wait before starting a worker again. A worker that died young extends the streak of
 * quick deaths and the wait doubles (100 ms, 200 ms, ... up to 10 s), so a crash loop does not
 * spin; one that had been up a while is restarted at once and the streak starts over.
 */
export function nextRestart(streak: number, uptimeMs: number): { streak: number; delayMs: number } {
  const next = uptimeMs < STABLE_UPTIME_MS ? streak + 1 : 0;
  return {
    streak: next,
    delayMs: next === 0 ? 0 : Math.min(FIRST_BACKOFF_MS * 2 ** (next - 1), MAX_BACKOFF_MS),
  };
}

// ---------------------------------------------------------------------------------------------
// The worker side.

/** Runs in a worker process: serve requests and answer the primary's questions. */
export async function runWorker(): Promise<void> {
  const raw = process.env[WORKER_SETUP];
  if (!raw) throw new Error(`a cluster worker needs ${WORKER_SETUP} from its primary`);
  const given = JSON.parse(raw) as {
    config: Record<string, unknown>;
    upstreamUrl: string;
    environment: string;
  };
  const setup: ProcessSetup = {
    config: validateConfig(given.config, policies),
    upstreamUrl: given.upstreamUrl,
    environment: given.environment,
  };
  let serving: Serving | undefined;
  // Listening before serving: a scrape during start-up gets an empty part, not a timeout.
  process.on("message", (message: unknown) => {
    const type = (message as { type?: unknown } | null)?.type;
    if (type === COLLECT) void answerCollect(message as CollectMessage, serving);
    else if (type === SHUTDOWN) {
      // Not serving yet: there is nothing to drain.
      if (serving) serving.stop("primary shutting down");
      else process.exit(0);
    }
    // The primary got SIGHUP.
    else if (type === RELOAD) void serving?.gateway.reload("SIGHUP");
  });
  // The primary is gone (killed outright): stop serving rather than linger as an orphan.
  process.on("disconnect", () => {
    if (serving) serving.stop("primary gone");
    else process.exit(1);
  });
  serving = await serve(setup, { log: createLogger(setup.config.log.level), ops: false });
}

async function answerCollect(message: CollectMessage, serving: Serving | undefined): Promise<void> {
  let reply: CollectedMessage;
  try {
    let part: unknown;
    if (message.what === "metrics")
      part = serving ? await serving.gateway.metrics.registry.getMetricsAsJSON() : [];
    else part = serving?.gateway.opsReports.get(message.path)?.collect();
    reply = { type: COLLECTED, id: message.id, part };
  } catch (error) {
    reply = { type: COLLECTED, id: message.id, error: String((error as Error)?.message ?? error) };
  }
  if (process.connected) process.send?.(reply);
}

// ---------------------------------------------------------------------------------------------
// The primary side.

export interface PrimaryOptions {
  readonly setup: ProcessSetup;
  readonly workers: number;
  readonly log: LoggerHandle;
  /** Once, when the first worker listens (the port is then known, also when PORT=0). */
  readonly onListening?: (port: number, opsPort: number, api: ApiDescription) => void;
  /** After every worker has exited, before the logs are flushed (e.g. stop the demo backend). */
  readonly onStopped?: () => Promise<void>;
}

interface Slot {
  worker: Worker | undefined;
  startedAt: number;
  listening: boolean;
  /** Quick deaths in a row (see nextRestart). */
  streak: number;
  restartTimer: NodeJS.Timeout | undefined;
  /** What the current worker said last, used when it does not answer in time and kept when it dies. */
  metrics: MetricsPart | undefined;
  readonly reports: Map<string, unknown>;
}

export async function runPrimary(options: PrimaryOptions): Promise<void> {
  const { setup, log } = options;
  const { config } = setup;
  const { logger, flush } = log;
  // The primary compiles the document and loads the keys itself: a broken setup fails once,
  // before any worker starts, and the policies' reports have their merge and render here. Its
  // metrics are its own and never exposed: the workers' are the gateway's (so it does not probe
  // the backend for gateway_upstream_up either).
  const gateway = createGateway({
    config: { ...config, upstream: { ...config.upstream, probeIntervalMs: 0 } },
    policies,
    upstreamUrl: setup.upstreamUrl,
    environment: setup.environment,
    logger,
    metrics: createMetrics({ defaultMetrics: false }),
  });

  const registry = new Registry();
  const workersUp = new Gauge({
    name: "gateway_workers",
    help: "Worker processes listening for requests",
    registers: [registry],
  });
  const restarts = new Counter({
    name: "gateway_worker_restarts_total",
    help: "Workers started again after one exited while the gateway was not shutting down",
    registers: [registry],
  });

  const slots: Slot[] = Array.from({ length: options.workers }, () => ({
    worker: undefined,
    startedAt: 0,
    listening: false,
    streak: 0,
    restartTimer: undefined,
    metrics: undefined,
    reports: new Map(),
  }));
  // What dead workers had counted (counters and histograms only): a scrape must never see a
  // counter go down because the process that held it died.
  let retiredMetrics: MetricsPart[] = [];
  const retiredReports = new Map<string, unknown>();
  let everListened = false;
  let stopping = false;
  let finishing = false;
  let exitCode = 0;
  let opsPort = 0;

  const pending = new Map<number, (reply: CollectedMessage | undefined) => void>();
  let nextId = 0;
  const ask = (worker: Worker, request: CollectRequest): Promise<CollectedMessage | undefined> =>
    new Promise((resolve) => {
      if (!worker.isConnected()) return resolve(undefined);
      const id = nextId++;
      const settle = (reply: CollectedMessage | undefined) => {
        clearTimeout(timer);
        pending.delete(id);
        resolve(reply);
      };
      const timer = setTimeout(settle, COLLECT_TIMEOUT_MS, undefined);
      pending.set(id, settle);
      const message: CollectMessage = { type: COLLECT, id, ...request };
      worker.send(message, (error: Error | null) => {
        if (error) settle(undefined);
      });
    });

  const live = () => slots.filter((slot) => slot.worker !== undefined);
  // Asks every live worker; an answer counts only if the worker that gave it still holds the slot.
  const askEach = (request: CollectRequest, keep: (slot: Slot, part: unknown) => void) =>
    Promise.all(
      live().map(async (slot) => {
        const worker = slot.worker as Worker;
        const reply = await ask(worker, request);
        if (slot.worker === worker && reply !== undefined) keep(slot, reply.part);
      }),
    );

  const source: OpsSource = {
    contentType: registry.contentType,
    async metrics() {
      await askEach({ what: "metrics" }, (slot, part) => {
        if (Array.isArray(part)) slot.metrics = part as MetricsPart;
      });
      workersUp.set(slots.filter((slot) => slot.listening).length);
      const parts: MetricsPart[] = [...retiredMetrics];
      for (const slot of slots) if (slot.metrics) parts.push(slot.metrics);
      parts.push((await registry.getMetricsAsJSON()) as unknown as MetricsPart);
      return AggregatorRegistry.aggregate(parts as MetricsPart[]).metrics();
    },
    async reportParts(path) {
      await askEach({ what: "report", path }, (slot, part) => {
        if (part !== undefined) slot.reports.set(path, part);
      });
      const parts: unknown[] = [];
      for (const slot of slots) if (slot.reports.has(path)) parts.push(slot.reports.get(path));
      if (retiredReports.has(path)) parts.push(retiredReports.get(path));
      return parts;
    },
  };

  const retire = (slot: Slot) => {
    if (slot.metrics) {
      const monotonic = slot.metrics.filter(
        (metric) => metric.type === "counter" || metric.type === "histogram",
      );
      retiredMetrics = [compact([...retiredMetrics, monotonic])];
    }
    for (const [path, part] of slot.reports) {
      const report = gateway.opsReports.get(path) as OpsReport | undefined;
      if (!report) continue;
      retiredReports.set(
        path,
        retiredReports.has(path) ? report.merge([retiredReports.get(path), part]) : part,
      );
    }
    slot.metrics = undefined;
    slot.reports.clear();
  };

  const fork = (slot: Slot) => {
    slot.restartTimer = undefined;
    const worker = cluster.fork({
      [WORKER_SETUP]: JSON.stringify({
        config,
        upstreamUrl: setup.upstreamUrl,
        environment: setup.environment,
      }),
    });
    slot.worker = worker;
    slot.startedAt = performance.now();
    slot.listening = false;
    // A message to a worker that is dying fails with EPIPE: its 'exit' tells the rest.
    worker.on("error", () => {});
    worker.on("message", (message: unknown) => {
      if ((message as { type?: unknown } | null)?.type !== COLLECTED) return;
      pending.get((message as CollectedMessage).id)?.(message as CollectedMessage);
    });
    worker.on("listening", (address: { port: number }) => {
      slot.listening = true;
      logger.info({ worker: worker.process.pid }, "worker listening");
      if (everListened) return;
      everListened = true;
      logListening(log, setup, { port: address.port, opsPort, workers: options.workers });
      options.onListening?.(address.port, opsPort, gateway.api);
      if (!stopping) for (const other of slots) if (other.worker === undefined) fork(other);
    });
    worker.on("exit", (code: number | null, signal: string | null) => onExit(slot, worker, code, signal));
  };

  const onExit = (slot: Slot, worker: Worker, code: number | null, signal: string | null) => {
    if (slot.worker !== worker) return;
    slot.worker = undefined;
    slot.listening = false;
    retire(slot);
    const pid = worker.process.pid;
    if (stopping) {
      if (live().length === 0) void finish();
      return;
    }
    if (!everListened) {
      // Start-up failed (the worker printed why): a fresh start cannot do better; stop the group.
      logger.error({ worker: pid, code, signal }, "a worker failed to start; stopping");
      exitCode = 1;
      stop("a worker failed to start");
      return;
    }
    const restart = nextRestart(slot.streak, performance.now() - slot.startedAt);
    slot.streak = restart.streak;
    restarts.inc();
    logger.warn(
      { worker: pid, code, signal, restartInMs: restart.delayMs },
      "worker exited; starting a new one",
    );
    slot.restartTimer = setTimeout(fork, restart.delayMs, slot);
  };

  const finish = async () => {
    if (finishing) return;
    finishing = true;
    await closeAndExit(opsServer, gateway, options, exitCode);
  };

  const stop = (why: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ why, workers: live().length }, "shutting down");
    // Readiness goes false at once; each worker keeps serving through its own drain delay.
    gateway.drain();
    for (const slot of slots) {
      if (slot.restartTimer) clearTimeout(slot.restartTimer);
      slot.restartTimer = undefined;
      if (slot.worker) tell(slot.worker, { type: SHUTDOWN });
    }
    const deadline = setTimeout(() => {
      logger.warn({ workers: live().length }, "shutdown deadline reached; killing the workers left");
      for (const slot of live()) slot.worker?.process.kill("SIGKILL");
      flush();
      process.exit(1);
    }, config.server.shutdownTimeoutMs + 2000);
    deadline.unref();
    if (live().length === 0) void finish();
  };

  // A worker whose primary is gone stops by itself ('disconnect'); told with SIGTERM, it drains
  // and says why in its own log, whatever becomes of the primary's channel.
  exitOnFatalError(log, () => {
    for (const slot of live()) slot.worker?.process.kill("SIGTERM");
  });

  const handleOps = createOpsHandler({
    reports: gateway.opsReports,
    isReady: () => !stopping && gateway.isReady() && slots.some((slot) => slot.listening),
    source,
    logger,
  });
  const opsServer = buildOpsServer(handleOps, config.server);
  await listen(opsServer, config, "ops");
  opsPort = (opsServer.address() as AddressInfo).port;

  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  process.on("SIGHUP", () => {
    for (const slot of live()) tell(slot.worker as Worker, { type: RELOAD });
  });
  function onSignal(signal: NodeJS.Signals) {
    if (stopping) {
      // A second signal means now, for the workers too (theirs flush their logs on the way out).
      logger.warn({ signal }, "second signal; exiting now");
      for (const slot of live()) slot.worker?.process.kill(signal);
      flush();
      process.exit(1);
    }
    stop(signal);
  }

  // One worker first, the others once it listens: an address that cannot be listened on (a busy
  // port, a host that does not resolve) fails in that one worker and is told in one line, not
  // once per worker, racing.
  fork(slots[0] as Slot);
}

/** A message that may not arrive (the worker may be on its way out). */
function tell(worker: Worker, message: { readonly type: string }): void {
  if (worker.isConnected()) worker.send(message, (error: Error | null) => void error);
}

/** Sums snapshots into one (synchronously, so it never races a scrape). */
function compact(parts: readonly MetricsPart[]): MetricsPart {
  return AggregatorRegistry.aggregate(parts as MetricsPart[])
    .getMetricsAsArray()
    .map((metric) => {
      const { name, help, type, aggregator, values } = metric as unknown as MetricJson;
      return { name, help, type, aggregator, values };
    });
}

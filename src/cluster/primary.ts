// All the cores of a machine: WORKERS=<n> runs n worker processes behind one public port
// (node:cluster). The primary serves no requests and runs no policy: it owns the public port and
// hands its connections to the workers (dispatch.ts), runs the ops port, answers /metrics and the
// policies' reports for the whole group (collection.ts), restarts a worker that dies (backing off
// when one keeps dying young), and passes a graceful shutdown and a reload on to the workers.
import cluster, { type Worker } from "node:cluster";
import type { AddressInfo } from "node:net";
import { availableParallelism } from "node:os";
import { Counter, Gauge, Registry } from "prom-client";
import { watchDocumentFiles } from "../document-watch.ts";
import { buildOpsServer, logPlanWarnings, opsTokenOf } from "../gateway.ts";
import { listen } from "../listen.ts";
import type { LoggerHandle } from "../logger.ts";
import { documentReloadsCounter } from "../metrics.ts";
import { type ApiDescription, loadDocumentVersion } from "../openapi.ts";
import { createOpsHandler, reportsOf } from "../ops.ts";
import { planGateway } from "../plan.ts";
import { closeAndExit, exitOnFatalError, logListening, type ProcessSetup } from "../serve.ts";
import { shutdownOnSignals } from "../shutdown.ts";
import { createGroupCollection, type Parts } from "./collection.ts";
import { createDispatcher } from "./dispatch.ts";
import { createClusterReloads } from "./document-commit.ts";
import { READY, RELOAD, SHUTDOWN, tell, typeOf, WORKER_SETUP, type WorkerSetup } from "./protocol.ts";

/** A worker that lived at least this long was not crash-looping: restart it at once. */
const STABLE_UPTIME_MS = 10_000;
const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 10_000;
/** How long every worker may take to compile a changed document before its reload is aborted. */
const PREPARE_TIMEOUT_MS = 60_000;
/** Workers drain on their own deadline; the primary allows them this much longer to exit. */
const WORKER_EXIT_GRACE_MS = 2000;

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

/** The primary's own instruments, on its registry (exported so the metrics reference lists them). */
export function primaryMetrics(registry: Registry): {
  readonly workersUp: Gauge;
  readonly restarts: Counter;
} {
  return {
    workersUp: new Gauge({
      name: "gateway_workers",
      help: "Worker processes listening for requests",
      registers: [registry],
    }),
    restarts: new Counter({
      name: "gateway_worker_restarts_total",
      help: "Workers started again after one exited while the gateway was not shutting down",
      registers: [registry],
    }),
  };
}

export interface PrimaryOptions {
  readonly setup: ProcessSetup;
  readonly workers: number;
  readonly log: LoggerHandle;
  /** Once, when the first worker serves. */
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
  readonly parts: Parts;
}

export async function runPrimary(options: PrimaryOptions): Promise<void> {
  const { setup, log } = options;
  const { config } = setup;
  const { logger } = log;
  // The document is read and compiled here, so that a broken one fails once, before any worker
  // starts; the workers compile the bytes read here (they never read the files themselves), and
  // everything else (the keys, the policies) is their own.
  const { api, source } = loadDocumentVersion(config.openapi, { basePath: config.basePath });
  // What the document asks that the gateway will not do as written: said once, here, not by each
  // worker (nor again by every restarted one); a policy refusing the document fails here too.
  logPlanWarnings(
    logger,
    planGateway({ api, config, policies: setup.policies, environment: setup.environment, now: Date.now }),
  );
  const reports = reportsOf(setup.policies, config.policies);
  // The ops port is the primary's: so is its token (the workers never read it).
  const token = opsTokenOf(config, logger);

  // The primary's own series; the gateway's are the workers'.
  const registry = new Registry();
  const { workersUp, restarts } = primaryMetrics(registry);
  // Each reload counted once here, not by each worker.
  const documentReloads = documentReloadsCounter(registry);

  const slots: Slot[] = Array.from({ length: options.workers }, () => ({
    worker: undefined,
    startedAt: 0,
    listening: false,
    streak: 0,
    restartTimer: undefined,
    parts: { metrics: undefined, reports: new Map() },
  }));
  let everListened = false;
  let stopping = false;
  let finishing = false;
  let exitCode = 0;
  let opsPort = 0;
  let port = 0;

  const live = () => slots.filter((slot) => slot.worker !== undefined);
  const collection = createGroupCollection({
    live: () =>
      live().map((slot) => ({
        worker: slot.worker as Worker,
        parts: slot.parts,
        holds: (worker: Worker) => slot.worker === worker,
      })),
    reports,
    registry,
    mergeFailed: (path, error) =>
      logger.error(
        { endpoint: path, error: String((error as Error)?.message ?? error) },
        "ops report merge failed",
      ),
    beforeScrape: () => workersUp.set(slots.filter((slot) => slot.listening).length),
  });

  const documents = createClusterReloads({
    config,
    logger,
    reloads: documentReloads,
    committed: source,
    workers: () => slots.filter((slot) => slot.listening && slot.worker).map((slot) => slot.worker as Worker),
    prepareTimeoutMs: PREPARE_TIMEOUT_MS,
  });
  const reloadDocument = (why: string) => {
    void documents.reload(why).then(() => watch.watch(documents.paths()));
  };
  const watch = watchDocumentFiles({
    debounceMs: config.document.reloadDebounceMs,
    onChange: reloadDocument,
    logger,
  });
  watch.watch(documents.paths());

  const dispatcher = createDispatcher({
    logger,
    maxConnections: config.server.maxConnections,
    refusal: () => (stopping ? "SHUTTING_DOWN" : "WORKER_UNAVAILABLE"),
  });

  const fork = (slot: Slot) => {
    slot.restartTimer = undefined;
    const workerSetup: WorkerSetup = {
      config,
      upstreamUrl: setup.upstreamUrl,
      environment: setup.environment,
      port,
    };
    const worker = cluster.fork({ [WORKER_SETUP]: JSON.stringify(workerSetup) });
    slot.worker = worker;
    slot.startedAt = performance.now();
    slot.listening = false;
    // A message to a worker that is dying fails with EPIPE: its 'exit' tells the rest.
    worker.on("error", () => {});
    collection.listen(worker);
    documents.listen(worker);
    worker.on("message", (message: unknown) => {
      if (typeOf(message) !== READY || slot.worker !== worker) return;
      if (!documents.isCurrent(worker)) {
        // It started on the version a reload replaced while it started: never let it serve.
        logger.info(
          { worker: worker.process.pid },
          "worker started on a replaced document; starting a new one",
        );
        worker.process.kill("SIGTERM");
        return;
      }
      slot.listening = true;
      dispatcher.take(worker);
      logger.info({ worker: worker.process.pid }, "worker listening");
      if (everListened) return;
      everListened = true;
      logListening(log, setup, { port, opsPort, workers: options.workers });
      options.onListening?.(port, opsPort, api);
      if (!stopping) for (const other of slots) if (other.worker === undefined) fork(other);
    });
    // Once its channel is closed every message it sent has been read: what it had not said it
    // took goes to another worker (or is answered by the primary).
    worker.on("disconnect", () => dispatcher.drop(worker));
    worker.on("exit", (code: number | null, signal: string | null) => {
      if (!worker.isConnected()) dispatcher.drop(worker);
      onExit(slot, worker, code, signal);
    });
  };

  const onExit = (slot: Slot, worker: Worker, code: number | null, signal: string | null) => {
    if (slot.worker !== worker) return;
    slot.worker = undefined;
    slot.listening = false;
    collection.retire(slot.parts);
    const pid = worker.process.pid;
    if (stopping) {
      // A worker that hit its own deadline (or died) while draining: the group did not stop cleanly.
      if (code !== 0) exitCode = 1;
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
    await closeAndExit(opsServer, undefined, options, exitCode);
  };

  const opsServer = buildOpsServer(
    createOpsHandler({
      reports,
      isReady: () => !stopping && slots.some((slot) => slot.listening),
      source: collection.source,
      logger,
      token,
      metricsOpen: config.opsMetricsOpen,
    }),
    config.server,
  );
  await listen(opsServer, config, "ops");
  opsPort = (opsServer.address() as AddressInfo).port;
  // Before any worker starts: an address that cannot be listened on fails here, in one line.
  await listen(dispatcher.server, config, "public");
  port = (dispatcher.server.address() as AddressInfo).port;

  const stop = shutdownOnSignals({
    log,
    deadlineMs: config.server.shutdownTimeoutMs + WORKER_EXIT_GRACE_MS,
    fields: () => ({ workers: live().length }),
    begin() {
      // Readiness goes false at once; each worker keeps serving through its own drain delay.
      stopping = true;
      watch.close();
      for (const slot of slots) {
        if (slot.restartTimer) clearTimeout(slot.restartTimer);
        slot.restartTimer = undefined;
        if (slot.worker) tell(slot.worker, { type: SHUTDOWN });
      }
      if (live().length === 0) void finish();
      // The workers stop taking connections when their drain ends; so does the port. A connection
      // that comes in between is answered 503 SHUTTING_DOWN by the primary.
      setTimeout(() => setImmediate(() => dispatcher.server.close()), config.server.shutdownDrainMs).unref();
    },
    onDeadline() {
      logger.warn({ workers: live().length }, "shutdown deadline reached; killing the workers left");
      for (const slot of live()) slot.worker?.process.kill("SIGKILL");
    },
    // A second signal means now, for the workers too (theirs flush their logs on the way out).
    onSecondSignal: (signal) => {
      for (const slot of live()) slot.worker?.process.kill(signal);
    },
  });
  process.on("SIGHUP", () => {
    void token?.reload("SIGHUP");
    for (const slot of live()) tell(slot.worker as Worker, { type: RELOAD });
    reloadDocument("SIGHUP");
  });

  // A worker whose primary is gone stops by itself ('disconnect'); told with SIGTERM, it drains
  // and says why in its own log, whatever becomes of the primary's channel.
  exitOnFatalError(log, () => {
    for (const slot of live()) slot.worker?.process.kill("SIGTERM");
  });

  // One worker first, the others once it serves: a worker that cannot start (a key file it cannot
  // read) fails alone and is told in one line, not once per worker, racing.
  fork(slots[0] as Slot);
}

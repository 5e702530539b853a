// A cluster's document reload, in two steps so that every worker serves the same version: the
// primary reads and hashes the files once and sends the bytes to every worker; each compiles,
// judges and builds the candidate and says whether it is ready; when all are, the primary commits
// it for all, else aborts it for all. IPC keeps each channel's order, so a worker handles the
// commit before any scrape or connection the primary sends it afterwards. A worker started later
// asks for the committed files (DOCUMENT_WANTED) and is answered once no reload is under way.
import type { Worker } from "node:cluster";
import type { Counter } from "prom-client";
import type { GatewayConfig } from "../config-schema.ts";
import { logRefusal, logReloaded, type ReloadResult } from "../document-reload.ts";
import type { Logger } from "../logger.ts";
import { oneAtATime } from "../one-at-a-time.ts";
import { type DocumentSource, pathsOf, readDocumentSource } from "../openapi/document-source.ts";
import {
  DOCUMENT,
  DOCUMENT_ABORT,
  DOCUMENT_COMMIT,
  DOCUMENT_PREPARE,
  DOCUMENT_PREPARED,
  DOCUMENT_WANTED,
  type DocumentPreparedMessage,
  tell,
  typeOf,
} from "./protocol.ts";

export interface ClusterReloadOptions {
  readonly config: GatewayConfig;
  readonly logger: Logger;
  readonly reloads: Counter<"result">;
  /** The files the workers start with (the primary read them at start-up). */
  readonly committed: DocumentSource;
  /** The workers that serve now: each prepares the candidate. */
  readonly workers: () => readonly Worker[];
  /** How long a worker may take to prepare before the reload is aborted for all. */
  readonly prepareTimeoutMs: number;
}

export interface ClusterReloads {
  /** Answers a worker's DOCUMENT_WANTED and its DOCUMENT_PREPARED (every worker, from its fork on). */
  listen(worker: Worker): void;
  /** Reads the files and, when they changed, prepares, then commits or aborts for every worker. */
  reload(why: string): Promise<ReloadResult>;
  /** Every path the last read went through (for the watch). */
  paths(): readonly string[];
  /**
   * Whether the worker was given the committed files. One that asked before a round and became
   * ready after its commit holds the version replaced: it must not serve (the primary replaces it).
   */
  isCurrent(worker: Worker): boolean;
}

interface Round {
  readonly id: number;
  readonly waiting: Set<Worker>;
  readonly answers: DocumentPreparedMessage[];
  done(): void;
}

export function createClusterReloads(options: ClusterReloadOptions): ClusterReloads {
  const { logger, reloads } = options;
  let committed = options.committed;
  let number = 1;
  let paths = pathsOf(committed);
  let round: Round | undefined;
  let ids = 0;
  // Workers that asked for the files while a round was under way: answered once it is decided.
  const wanting = new Set<Worker>();

  const given = new WeakMap<Worker, string>();
  const sendCommitted = (worker: Worker) => {
    given.set(worker, committed.sha256);
    tell(worker, { type: DOCUMENT, source: committed });
  };

  const runRound = async (source: DocumentSource, why: string): Promise<ReloadResult> => {
    const workers = options.workers();
    const id = ++ids;
    let timer: NodeJS.Timeout | undefined;
    const answered = new Promise<void>((resolve) => {
      round = { id, waiting: new Set(workers), answers: [], done: resolve };
      if (workers.length === 0) resolve();
      timer = setTimeout(resolve, options.prepareTimeoutMs);
    });
    for (const worker of workers) tell(worker, { type: DOCUMENT_PREPARE, id, source, why });
    await answered;
    clearTimeout(timer);
    const { waiting, answers } = round as Round;
    round = undefined;
    const failed = answers.find((answer) => answer.result !== "ok");
    const silent = waiting.size;
    const running = { number, sha256: committed.sha256 };
    if (failed !== undefined || silent > 0) {
      for (const worker of options.workers())
        tell(worker, { type: DOCUMENT_ABORT, sha256: source.sha256, why });
      const result: "refused" | "error" = failed?.result === "refused" ? "refused" : "error";
      const reason =
        failed?.reason ??
        `${silent} worker${silent === 1 ? "" : "s"} did not prepare it within ${options.prepareTimeoutMs} ms`;
      reloads.labels(result).inc();
      logRefusal(logger, why, result, reason, running, failed?.differences ?? answers[0]?.differences ?? []);
      return result;
    }
    for (const worker of options.workers()) {
      given.set(worker, source.sha256);
      tell(worker, { type: DOCUMENT_COMMIT, sha256: source.sha256, why });
    }
    committed = source;
    number++;
    reloads.labels("ok").inc();
    logReloaded(logger, why, running, { number, sha256: source.sha256 }, answers[0]?.differences ?? []);
    return "ok";
  };

  const reloadOnce = async (why: string): Promise<ReloadResult> => {
    let source: DocumentSource;
    try {
      source = (await readDocumentSource(options.config.openapi)).source;
    } catch (error) {
      reloads.labels("error").inc();
      const reason = `cannot read the OpenAPI description ${options.config.openapi}: ${(error as Error).message}`;
      logRefusal(logger, why, "error", reason, { number, sha256: committed.sha256 }, []);
      return "error";
    }
    paths = pathsOf(source);
    if (source.sha256 === committed.sha256) {
      reloads.labels("unchanged").inc();
      return "unchanged";
    }
    try {
      return await runRound(source, why);
    } finally {
      for (const worker of wanting) sendCommitted(worker);
      wanting.clear();
    }
  };

  // One reload at a time: a second asked for meanwhile runs after it, and any number make one.
  const oneReload = oneAtATime(reloadOnce);
  const reload = (why: string): Promise<ReloadResult> => oneReload.call(why);

  return {
    listen(worker) {
      worker.on("message", (message: unknown) => {
        const type = typeOf(message);
        if (type === DOCUMENT_WANTED) {
          // A worker starting during a round would get the version about to be replaced.
          if (!oneReload.running) sendCommitted(worker);
          else wanting.add(worker);
        } else if (type === DOCUMENT_PREPARED) {
          const answer = message as DocumentPreparedMessage;
          if (round === undefined || answer.id !== round.id || !round.waiting.delete(worker)) return;
          round.answers.push(answer);
          if (round.waiting.size === 0) round.done();
        }
      });
      // A worker that exits during a round has nothing to prepare: its replacement asks for the
      // files once the round is decided.
      worker.on("exit", () => {
        wanting.delete(worker);
        if (round?.waiting.delete(worker) && round.waiting.size === 0) round.done();
      });
    },
    reload,
    paths: () => paths,
    isCurrent: (worker) => given.get(worker) === committed.sha256,
  };
}

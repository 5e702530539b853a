// A cluster worker: serves requests like a single process, on the connections its primary hands
// over (intake.ts), without the ops port (the primary's); answers the primary's questions and
// orders, and tells it what it counted every second, unasked, so that a worker killed outright
// takes at most its last second of counts with it.
import { validateConfig } from "../config.ts";
import { oneLine } from "../document-reload.ts";
import { createLogger } from "../logger.ts";
import type { DocumentSource } from "../openapi/document-source.ts";
import { reportsOf } from "../ops.ts";
import type { AnyPolicyDefinition } from "../policy-registry.ts";
import { type Serving, serve } from "../serve.ts";
import { takeConnections } from "./intake.ts";
import {
  COLLECT,
  COLLECTED,
  COUNTED,
  type CollectedMessage,
  type CollectMessage,
  type CountedMessage,
  DOCUMENT,
  DOCUMENT_ABORT,
  DOCUMENT_COMMIT,
  DOCUMENT_PREPARE,
  DOCUMENT_PREPARED,
  DOCUMENT_WANTED,
  type DocumentDecisionMessage,
  type DocumentMessage,
  type DocumentPreparedMessage,
  type DocumentPrepareMessage,
  READY,
  RELOAD,
  SHUTDOWN,
  typeOf,
  WORKER_SETUP,
  type WorkerSetup,
} from "./protocol.ts";

export async function runWorker(policies: readonly AnyPolicyDefinition[]): Promise<void> {
  const raw = process.env[WORKER_SETUP];
  if (!raw) throw new Error(`a cluster worker needs ${WORKER_SETUP} from its primary`);
  const given = JSON.parse(raw) as WorkerSetup;
  const config = validateConfig({ ...given.config }, policies);
  let serving: Serving | undefined;
  let stopWhenServing: string | undefined;
  // Listening before serving: a scrape during start-up gets an empty part, not a timeout.
  process.on("message", (message: unknown) => {
    const type = typeOf(message);
    if (type === COLLECT) void answerCollect(message as CollectMessage, serving);
    else if (type === SHUTDOWN) {
      // Still starting: its listen may already have reached the primary, which then hands it
      // connections at once (exiting now would reset them). It drains like the others once it
      // serves.
      if (serving) serving.stop("primary shutting down");
      else stopWhenServing = "primary shutting down";
    }
    // The primary got SIGHUP.
    else if (type === RELOAD) void serving?.gateway.reload("SIGHUP");
    else if (type === DOCUMENT) gotDocument?.((message as DocumentMessage).source);
    else if (type === DOCUMENT_PREPARE) prepareDocument(message as DocumentPrepareMessage, serving);
    else if (type === DOCUMENT_COMMIT) {
      const { sha256, why } = message as DocumentDecisionMessage;
      serving?.gateway.document.commit(sha256, why);
    } else if (type === DOCUMENT_ABORT)
      serving?.gateway.document.abort((message as DocumentDecisionMessage).sha256);
  });
  // The primary is gone (killed outright): stop serving rather than linger as an orphan.
  process.on("disconnect", () => {
    if (serving) serving.stop("primary gone");
    else process.exit(1);
  });
  // The document's files as the primary committed them: a worker never reads them itself, so
  // that it serves the version every other worker serves, however the files changed since.
  let gotDocument: ((source: DocumentSource) => void) | undefined;
  const document = await new Promise<DocumentSource>((resolve) => {
    gotDocument = resolve;
    process.send?.({ type: DOCUMENT_WANTED });
  });
  gotDocument = undefined;
  serving = await serve(
    { policies, config, upstreamUrl: given.upstreamUrl, environment: given.environment },
    {
      document,
      log: createLogger(config.log.level),
      ops: false,
      startupWarnings: false,
      intake: (server) => takeConnections(server, given.port),
    },
  );
  if (process.connected) process.send?.({ type: READY });
  if (stopWhenServing !== undefined) serving.stop(stopWhenServing);
  const gateway = serving.gateway;
  const reportPaths = [...reportsOf(policies, config.policies).keys()];
  const tellCounts = async () => {
    const message: CountedMessage = {
      type: COUNTED,
      metrics: (await gateway.metrics.registry.getMetricsAsJSON()) as unknown as CountedMessage["metrics"],
      // A report's part may be built in slices (a promise): what crosses to the primary is the part.
      reports: await Promise.all(
        reportPaths.map(async (path) => [path, await gateway.collectReport(path)] as const),
      ),
    };
    if (process.connected) process.send?.(message);
  };
  setInterval(() => void tellCounts().catch(() => {}), COUNT_INTERVAL_MS).unref();
}

/** How often a worker tells the primary what it counted: what a worker killed outright loses at most. */
const COUNT_INTERVAL_MS = 1000;

/** Compiles and judges the primary's candidate, keeps it, and says whether it is ready to commit. */
function prepareDocument(message: DocumentPrepareMessage, serving: Serving | undefined): void {
  const outcome = serving?.gateway.document.prepare(message.source, message.why);
  const reply: DocumentPreparedMessage = {
    type: DOCUMENT_PREPARED,
    id: message.id,
    result: outcome?.result ?? "error",
    ...(outcome === undefined
      ? { reason: "the worker is still starting" }
      : outcome.reason === undefined
        ? {}
        : { reason: outcome.reason }),
    differences: (outcome?.differences ?? []).map(oneLine),
  };
  if (process.connected) process.send?.(reply);
}

async function answerCollect(message: CollectMessage, serving: Serving | undefined): Promise<void> {
  let reply: CollectedMessage;
  try {
    let part: unknown;
    if (message.what === "metrics")
      part = serving ? await serving.gateway.metrics.registry.getMetricsAsJSON() : [];
    else part = await serving?.gateway.collectReport(message.path);
    reply = { type: COLLECTED, id: message.id, part };
  } catch (error) {
    reply = { type: COLLECTED, id: message.id, error: String((error as Error)?.message ?? error) };
  }
  if (process.connected) process.send?.(reply);
}

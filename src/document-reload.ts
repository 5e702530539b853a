// Reloading the document while serving: read the files once (document-source.ts), and when they
// changed, compile and plan the candidate, compare it with the running version (document-diff.ts)
// and build its policies, all off the request path, then swap it in between two requests
// (document-version.ts). A candidate that fails to load or to plan is refused, as is one that
// weakens security the running document asks for (always) or that breaks a client of it (unless
// the config says document.allowBreaking). A refusal keeps the running version, and says why.
//
// Alone, a process reloads in one step. In a cluster the primary reads the files and every worker
// prepares the same bytes; the primary commits when all are ready, or aborts for all (primary.ts).
import type { GatewayConfig } from "./config-schema.ts";
import { compareDocuments, type DocumentDifference } from "./document-diff.ts";
import type { DocumentVersion, DocumentVersions } from "./document-version.ts";
import type { Logger } from "./logger.ts";
import type { Metrics } from "./metrics.ts";
import { oneAtATime } from "./one-at-a-time.ts";
import { type DocumentSource, pathsOf } from "./openapi/document-source.ts";
import { type ApiDescription, compileDocumentSource, readDocumentVersion } from "./openapi.ts";
import type { AnyPolicyDefinition } from "./policy-registry.ts";

export type ReloadResult = "ok" | "unchanged" | "refused" | "error";

export interface ReloadOutcome {
  readonly result: ReloadResult;
  /** Why it was refused or failed (one line). */
  readonly reason?: string;
  /** The running version's number and hash after it (the new one when committed). */
  readonly version: number;
  readonly sha256: string;
  /** What the candidate changes, breaking ones first (empty when it did not compile). */
  readonly differences: readonly DocumentDifference[];
}

/** The verdict on a candidate: undefined when it may replace the running document, else why not. */
export function refusalOf(
  differences: readonly DocumentDifference[],
  allowBreaking: boolean,
): string | undefined {
  const weakening = differences.filter((difference) => difference.weakensSecurity);
  if (weakening.length > 0) {
    return `it weakens the security the running document asks for: ${weakening.map(oneLine).join("; ")}`;
  }
  const breaking = differences.filter((difference) => difference.breaking);
  if (breaking.length > 0 && !allowBreaking) {
    return `it has ${breaking.length} breaking change${breaking.length === 1 ? "" : "s"} (set document.allowBreaking to accept them): ${breaking
      .map(oneLine)
      .join("; ")}`;
  }
  return undefined;
}

/** A difference as one line of a log: the operation, then what changes. */
export function oneLine(difference: DocumentDifference): string {
  const where = difference.operation === undefined ? "" : `${difference.operation}: `;
  return `${where}${difference.message}`;
}

/** A candidate compiled, judged and built, not yet serving (a cluster worker's, until the commit). */
interface Prepared {
  readonly version: DocumentVersion;
  readonly differences: readonly DocumentDifference[];
}

export interface DocumentReloads {
  /** Alone: reads the files and, when they changed, judges the candidate and swaps it in. */
  reload(why: string): Promise<ReloadOutcome>;
  /** A cluster worker: compiles and judges these bytes; "ok" means ready to commit. */
  prepare(source: DocumentSource, why: string): ReloadOutcome;
  /** The prepared candidate of this hash serves from now on (false: none was prepared). */
  commit(sha256: string, why: string): boolean;
  /** The prepared candidate is dropped; the running version stays. */
  abort(sha256: string): void;
  /** Every path the last read of the files went through: what a watch watches the folders of. */
  paths(): readonly string[];
}

export interface ReloadSetting {
  readonly config: GatewayConfig;
  /** The policies (policies/index.ts): what their options change in a candidate is compared too. */
  readonly policies: readonly AnyPolicyDefinition[];
  readonly versions: DocumentVersions;
  /** Builds the version of a compiled candidate (its policies created): what createGateway does at start. */
  readonly build: (api: ApiDescription, identity: { number: number; sha256: string }) => DocumentVersion;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Whether this process counts and logs reloads (a cluster's primary does, once for its workers). */
  readonly reportsReloads: boolean;
  /** The files the running version was read from. */
  readonly source: DocumentSource;
}

export function createDocumentReloads(setting: ReloadSetting): DocumentReloads {
  const { config, versions, logger, metrics, policies } = setting;
  const options = { basePath: config.basePath };
  let prepared: Prepared | undefined;
  let numbers = versions.current().number;
  let paths = pathsOf(setting.source);
  showVersion(metrics, undefined, versions.current());

  const count = (result: ReloadResult) => {
    if (setting.reportsReloads) metrics.documentReloads.labels(result).inc();
  };
  const outcome = (
    result: ReloadResult,
    differences: readonly DocumentDifference[],
    reason?: string,
  ): ReloadOutcome => {
    const running = versions.current();
    return {
      result,
      ...(reason === undefined ? {} : { reason }),
      version: running.number,
      sha256: running.sha256,
      differences,
    };
  };
  const refuse = (
    why: string,
    result: "refused" | "error",
    reason: string,
    differences: readonly DocumentDifference[],
  ) => {
    count(result);
    const running = versions.current();
    if (setting.reportsReloads) logRefusal(logger, why, result, reason, running, differences.map(oneLine));
    return outcome(result, differences, reason);
  };
  /** Compiles, plans, compares and builds: everything but the swap. */
  const assess = (
    api: ApiDescription,
    sha256: string,
    why: string,
  ): Prepared | { readonly refused: ReloadOutcome } => {
    const running = versions.current();
    const differences = compareDocuments(running.api, api, { policies, options: config.policies });
    adviseOnChange(logger, running, api, differences, why);
    const refusal = refusalOf(differences, config.document.allowBreaking);
    if (refusal !== undefined) return { refused: refuse(why, "refused", refusal, differences) };
    let version: DocumentVersion;
    try {
      // The plan runs first inside: what a policy refuses of the document is refused here.
      version = setting.build(api, { number: numbers + 1, sha256 });
    } catch (error) {
      return { refused: refuse(why, "error", (error as Error).message, differences) };
    }
    return { version, differences };
  };

  const swap = (candidate: Prepared, why: string) => {
    const previous = versions.current();
    numbers = candidate.version.number;
    versions.swap(candidate.version);
    showVersion(metrics, previous, candidate.version);
    count("ok");
    if (!setting.reportsReloads) return;
    logReloaded(logger, why, previous, candidate.version, candidate.differences.map(oneLine));
    // What the new plan warns of that the running one did not: said once, as at start-up.
    const before = new Set(previous.plan.warnings.map((warning) => warning.message));
    for (const { warning, message, policy, operations, fixes } of candidate.version.plan.warnings) {
      if (!before.has(message)) logger.warn({ warning, policy, operations, fixes }, message);
    }
  };

  // One reload at a time: a second asked for meanwhile runs after it, and any number make one.
  const reloadOnce = async (why: string): Promise<ReloadOutcome> => {
    let read: { api: ApiDescription; source: DocumentSource };
    try {
      read = await readDocumentVersion(config.openapi, options);
    } catch (error) {
      return refuse(why, "error", (error as Error).message, []);
    }
    // Whatever becomes of it: a $ref added or a symlink swapped is watched from now on.
    paths = pathsOf(read.source);
    if (read.source.sha256 === versions.current().sha256) {
      count("unchanged");
      return outcome("unchanged", []);
    }
    try {
      const assessed = assess(read.api, read.source.sha256, why);
      if ("refused" in assessed) return assessed.refused;
      swap(assessed, why);
      return outcome("ok", assessed.differences);
    } catch (error) {
      // A reload never ends the process: whatever failed, the running version serves on.
      return refuse(why, "error", String((error as Error)?.message ?? error), []);
    }
  };

  const reloads = oneAtATime(reloadOnce);

  return {
    reload(why) {
      return reloads.call(why);
    },
    prepare(source, why) {
      if (prepared !== undefined) void closeDropped(prepared, logger);
      prepared = undefined;
      if (source.sha256 === versions.current().sha256) return outcome("unchanged", []);
      let api: ApiDescription;
      try {
        api = compileDocumentSource(source, options);
      } catch (error) {
        return refuse(why, "error", (error as Error).message, []);
      }
      const assessed = assess(api, source.sha256, why);
      if ("refused" in assessed) return assessed.refused;
      prepared = assessed;
      return {
        ...outcome("ok", assessed.differences),
        version: assessed.version.number,
        sha256: source.sha256,
      };
    },
    commit(sha256, why) {
      if (prepared === undefined || prepared.version.sha256 !== sha256) return false;
      const candidate = prepared;
      prepared = undefined;
      swap(candidate, why);
      return true;
    },
    paths: () => paths,
    abort(sha256) {
      if (prepared === undefined || prepared.version.sha256 !== sha256) return;
      void closeDropped(prepared, logger);
      prepared = undefined;
    },
  };
}

/** gateway_document_info names the version serving, and only it. */
function showVersion(metrics: Metrics, previous: DocumentVersion | undefined, next: DocumentVersion): void {
  if (previous !== undefined) metrics.documentInfo.remove(infoLabels(previous));
  metrics.documentInfo.labels(infoLabels(next)).set(1);
}

/**
 * The hash as `git log --oneline` shows a commit's: its first 16 hex digits, enough to tell
 * versions apart (the log lines give it whole). A whole 64-digit hex string in /metrics would
 * read as a key's digest, which nothing there may show (test/inbound.test.ts).
 */
export const SHORT_HASH_DIGITS = 16;

function infoLabels(version: DocumentVersion): { version: string; sha256: string } {
  return { version: version.api.version, sha256: version.sha256.slice(0, SHORT_HASH_DIGITS) };
}

async function closeDropped(candidate: Prepared, logger: Logger): Promise<void> {
  for (const { name, instance } of candidate.version.policies) {
    try {
      await instance.close?.();
    } catch (error) {
      logger.error({ policy: name, phase: "close", error: String(error) }, "policy failed");
    }
  }
}

/** The line of a reload refused (a process alone, or a cluster's primary for all its workers). */
export function logRefusal(
  logger: Logger,
  why: string,
  result: "refused" | "error",
  reason: string,
  running: { readonly number: number; readonly sha256: string },
  differences: readonly string[],
): void {
  logger.error(
    { why, result, reason, version: running.number, sha256: running.sha256, differences },
    "document reload refused; the running version keeps serving",
  );
}

/** The line of a reload committed, with what the new version changes. */
export function logReloaded(
  logger: Logger,
  why: string,
  previous: { readonly number: number; readonly sha256: string },
  next: { readonly number: number; readonly sha256: string; readonly api?: ApiDescription },
  differences: readonly string[],
): void {
  logger.info(
    {
      why,
      version: next.number,
      sha256: next.sha256,
      previous: { version: previous.number, sha256: previous.sha256 },
      ...(next.api ? { title: next.api.title, documentVersion: next.api.version } : {}),
      differences,
    },
    "document reloaded",
  );
}

/**
 * Whom a candidate's breaking changes would break, as the running version's policies remember
 * (the usage policy): one warn line of advice, whether the reload then refuses the candidate or
 * takes it (document.allowBreaking). A policy that throws here costs the advice, not the reload.
 */
function adviseOnChange(
  logger: Logger,
  running: DocumentVersion,
  candidate: ApiDescription,
  differences: readonly DocumentDifference[],
  why: string,
): void {
  if (!differences.some((difference) => difference.breaking)) return;
  for (const { name, instance } of running.policies) {
    let advice: readonly string[];
    try {
      advice = instance.adviseOnChange?.(candidate, differences) ?? [];
    } catch (error) {
      logger.error({ policy: name, phase: "adviseOnChange", error: String(error) }, "policy failed");
      continue;
    }
    if (advice.length > 0) logger.warn({ why, policy: name, advice }, "document change review");
  }
}

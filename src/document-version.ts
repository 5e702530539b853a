// A version of the document: what the gateway compiled from one snapshot of it (the description
// with its router, its plan, the policies created for it, and its request side: the one engine
// both front doors judge by, pipeline/request-judge.ts) and the SHA-256 of the files. Built off the request path; a request reads the current version once, when it
// arrives, and finishes under it whatever is swapped in meanwhile. The swap is one assignment
// between two requests. An old version is closed (its policies' timers, its key file's poll) when
// the last request that started under it ends.
//
// Operations are objects of their version, so a chain or a status label is found by the
// operation alone: every live version's chains sit in one map, which the request's later steps
// (the answer's phases, the local replies) read without knowing versions exist.
import type { GatewayConfig } from "./config-schema.ts";
import type { Logger } from "./logger.ts";
import { createStatusLabels, type StatusLabels } from "./metrics.ts";
import type { ApiDescription, Operation } from "./openapi.ts";
import { CORE_RESPONSE_HEADERS } from "./pipeline/answer-headers.ts";
import type { Chain, NamedPolicy, PolicyFailure } from "./pipeline/chains.ts";
import type { CoreExchange } from "./pipeline/exchange.ts";
import { createRequestJudge, type RequestJudge } from "./pipeline/request-judge.ts";
import { type GatewayPlan, planGateway } from "./plan.ts";
import type { PolicyContext, PolicyInstance } from "./policy.ts";
import type { AnyPolicyDefinition } from "./policy-registry.ts";
import { ConfigError } from "./startup-errors.ts";

export interface DocumentVersion {
  /** 1 at start-up, then one more at each reload committed. */
  readonly number: number;
  /** Of the files it was compiled from (document-source.ts); "" when compiled from a path alone. */
  readonly sha256: string;
  readonly api: ApiDescription;
  readonly plan: GatewayPlan;
  readonly policies: readonly NamedPolicy[];
  /** Its request side (arrival phases, the document's router, each operation's chain). */
  readonly judge: RequestJudge;
  readonly statusLabels: StatusLabels;
  readonly ownHeaders: OwnHeaders;
}

/**
 * The request headers the policies set for the backend, and the response headers the gateway
 * adds to answers (lower case): what a proxy in front must carry in decision mode.
 */
export interface OwnHeaders {
  readonly request: readonly string[];
  readonly response: readonly string[];
}

/** What every version is built with: the policies, their options and instruments, the process's own. */
export interface VersionSetting {
  readonly config: GatewayConfig;
  readonly policies: readonly AnyPolicyDefinition[];
  /** Each policy's instruments, registered once on the gateway's registry: series outlive a version. */
  readonly instruments: ReadonlyMap<string, unknown>;
  readonly logger: Logger;
  readonly environment: string;
  readonly now: () => number;
  /** Every status the gateway answers with itself (the error catalogue's). */
  readonly gatewayStatuses: readonly number[];
  /** Told of a policy's phase that throws (the pipeline logs it). */
  readonly failed: PolicyFailure;
}

/**
 * The version of `api`: its plan (which throws what a policy refuses of the document), then its
 * policies created and its request judge built. Bad policy options are a ConfigError; nothing is
 * left open when it throws.
 */
export function buildVersion(
  setting: VersionSetting,
  api: ApiDescription,
  identity: { readonly number: number; readonly sha256: string },
  /** Told the plan before any policy is created (start-up logs its warnings first). */
  onPlan?: (plan: GatewayPlan) => void,
): DocumentVersion {
  const { config, logger, environment, now } = setting;
  const plan = planGateway({ api, config, policies: setting.policies, environment, now });
  onPlan?.(plan);
  const instances: PolicyInstance[] = [];
  const policies: NamedPolicy[] = [];
  const context: PolicyContext = {
    api,
    logger,
    environment,
    now,
    responseHeaders: () => [
      ...new Set([
        ...CORE_RESPONSE_HEADERS,
        ...instances.flatMap((instance) => instance.responseHeaders ?? []),
      ]),
    ],
  };
  try {
    for (const definition of setting.policies) {
      const instance = definition.create(
        config.policies[definition.name],
        context,
        setting.instruments.get(definition.name),
      );
      instances.push(instance);
      policies.push({ name: definition.name, instance });
    }
  } catch (error) {
    for (const instance of instances) void instance.close?.();
    // Bad policy options are a configuration problem: one line naming the field, no stack.
    throw error instanceof ConfigError || !(error instanceof Error) ? error : new ConfigError(error.message);
  }
  try {
    return {
      ...identity,
      api,
      plan,
      policies,
      judge: createRequestJudge({ api, policies, failed: setting.failed }),
      statusLabels: createStatusLabels(api.operations, setting.gatewayStatuses),
      ownHeaders: {
        request: [...new Set(instances.flatMap((instance) => instance.requestHeaders ?? []))],
        response: context.responseHeaders(),
      },
    };
  } catch (error) {
    for (const instance of instances) void instance.close?.();
    throw error;
  }
}

/** The version serving now, the ones still finishing requests, and the bookkeeping between them. */
export interface DocumentVersions {
  /** The version new requests are judged by. */
  current(): DocumentVersion;
  /** A request arrives: it is counted under the current version, which it keeps to the end. */
  enter(): DocumentVersion;
  /** That request's answer is done (or cut): the last one of a replaced version closes it. */
  leave(version: DocumentVersion | undefined): void;
  /** Every live version's chains, by operation. */
  readonly chains: ReadonlyMap<Operation, Chain>;
  /** The status label of an answer to an operation of any live version. */
  readonly statusLabel: StatusLabels;
  /** From the next request on, `next` judges; the replaced version closes once its requests end. */
  swap(next: DocumentVersion): void;
  /** Versions replaced whose requests are still under way (a test waits for 0). */
  finishing(): number;
  /** Closes every version's policies (shutdown: no request is left). */
  close(): Promise<void>;
}

export function createDocumentVersions(first: DocumentVersion, logger: Logger): DocumentVersions {
  let current = first;
  const inFlight = new Map<DocumentVersion, number>([[first, 0]]);
  const chains = new Map<Operation, Chain>();
  const labels = new Map<Operation, StatusLabels>();
  const register = (version: DocumentVersion) => {
    for (const [operation, chain] of version.judge.chains) chains.set(operation, chain);
    for (const operation of version.api.operations) labels.set(operation, version.statusLabels);
  };
  register(first);

  const retire = (version: DocumentVersion) => {
    inFlight.delete(version);
    for (const operation of version.api.operations) {
      chains.delete(operation);
      labels.delete(operation);
    }
    void closePolicies(version, logger);
  };

  return {
    current: () => current,
    enter() {
      inFlight.set(current, (inFlight.get(current) ?? 0) + 1);
      return current;
    },
    leave(version) {
      if (version === undefined) return;
      const left = (inFlight.get(version) ?? 1) - 1;
      if (left > 0 || version === current) inFlight.set(version, left);
      else retire(version);
    },
    chains,
    statusLabel: (operation, status) =>
      ((operation && labels.get(operation)) ?? current.statusLabels)(operation, status),
    swap(next) {
      const previous = current;
      register(next);
      inFlight.set(next, 0);
      current = next;
      if ((inFlight.get(previous) ?? 0) === 0) retire(previous);
    },
    finishing: () => inFlight.size - 1,
    async close() {
      const all = [...inFlight.keys()];
      inFlight.clear();
      await Promise.all(all.map((version) => closePolicies(version, logger)));
    },
  };
}

/** The version a request arrived under (set by its front door, before anything reads it). */
export function versionOf(exchange: CoreExchange): DocumentVersion {
  return exchange.version as DocumentVersion;
}

async function closePolicies(version: DocumentVersion, logger: Logger): Promise<void> {
  await Promise.all(
    version.policies.map(async ({ name, instance }) => {
      try {
        await instance.close?.();
      } catch (error) {
        logger.error({ policy: name, phase: "close", error: String(error) }, "policy failed");
      }
    }),
  );
}

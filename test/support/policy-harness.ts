// A policy's phases run in memory, as the gateway runs them: no server, no socket, no backend.
// The policy is created the way start-up creates it (its options validated with the config, so
// defaults fill in and a bad field fails with its path; its own instruments on a registry; the
// description compiled once per document), and each request goes through the gateway's own
// request judge (src/pipeline/request-judge.ts), the one engine both front doors run: the request
// id, the canonical target, the arrival phases, the query, the router, the headers a backend
// would fold, the operation's chain; then the core's body reading with its cap, the body phases,
// and the local replies that write a refusal. A unit test of a policy runs the spine production
// runs, not a copy of it. Only the sockets are replaced: the request is Node's IncomingMessage
// over a socket never connected, and the response records what was written.
//
// Two promises are checked on every answer, so that a test of any policy holds them without
// saying so: an error body the gateway writes is the interface's Error object (the document's
// own schema), and a header the policy adds to an answer is one it declares in
// `responseHeaders` (CORS exposes exactly those to pages; one left out is a header no page can
// read). Headers a browser reads for itself, not the page (Vary, Access-Control-*), need no
// declaration.
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import {
  type IncomingHttpHeaders,
  IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from "node:http";
import { Socket } from "node:net";
import type { Registry } from "prom-client";
import registryPolicies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import type { GatewayConfig } from "../../src/config-schema.ts";
import { catalogueOf, coreCatalogue, type GatewayError, gatewayError } from "../../src/errors.ts";
import { createLogger } from "../../src/logger.ts";
import { JSON_FAMILY_MEDIA_TYPE } from "../../src/media-types.ts";
import { createMetrics } from "../../src/metrics.ts";
import { type ApiDescription, loadApiDescription, type Operation } from "../../src/openapi.ts";
import { CORE_RESPONSE_HEADERS, finishHeaders } from "../../src/pipeline/answer-headers.ts";
import { readBody } from "../../src/pipeline/body.ts";
import { runResponse } from "../../src/pipeline/chains.ts";
import type { CoreExchange } from "../../src/pipeline/exchange.ts";
import { createLocalReplies } from "../../src/pipeline/local-replies.ts";
import { createRequestJudge } from "../../src/pipeline/request-judge.ts";
import type {
  Exchange,
  OperationPolicy,
  PolicyContext,
  PolicyDefinition,
  PolicyInstance,
  UpstreamAnswer,
} from "../../src/policy.ts";
import type { AnyPolicyDefinition } from "../../src/policy-registry.ts";
import { DEFAULT_OPENAPI_FILE } from "../../src/project-files.ts";
import { LogCapture } from "./log-capture.ts";

export interface HarnessSetting {
  /** The OpenAPI document, a path: the bundled config/openapi.json unless given. */
  readonly openapi?: string;
  /**
   * The rest of the gateway config as a config file writes it: other policies' options, basePath; or a gateway's validated config. The policy's own options
   * are the harness's argument.
   */
  readonly config?: Readonly<Record<string, unknown>> | GatewayConfig;
  /** "production" unless given, as a gateway started by a test. */
  readonly environment?: string;
  /** The clock the policy reads; Date.now unless given. */
  readonly now?: () => number;
}

export interface HarnessRequest {
  /** GET unless given. */
  readonly method?: string;
  /** The request target as the client sends it, base path and query included: "/v1/pets?limit=5". */
  readonly path: string;
  /** Any case; Host is added when missing, and Content-Length for a body without either framing header. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Read by the core (its cap: server.maxRequestBodyBytes) and given to the body phases, for operations with a request body. */
  readonly body?: string | Buffer;
  /** The client's address as the core established it. */
  readonly clientAddress?: string;
}

/** The backend's answer, for trial.respond(). */
export interface BackendAnswer {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** Raw body text; or `json`, which also sets Content-Type: application/json. */
  readonly body?: string;
  readonly json?: unknown;
  /** The answer went over the buffering cap: the phases get no body, as from the core. */
  readonly oversized?: boolean;
}

/** The Error object the gateway writes (checked against the document's Error schema). */
export interface ErrorObject {
  readonly code: string;
  readonly message: string;
  readonly status: number;
}

/** What the client receives. */
export interface Answer {
  readonly status: number;
  /** Lower-case names; a list is joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** The refusal's Error object when the gateway refused (the policy or the core); else undefined. */
  readonly error: ErrorObject | undefined;
}

/** What the backend would receive, as the policies left it. */
export interface Forwarded {
  readonly method: string;
  /** The backend's target: the base path cut off, the query written anew when a policy changed it. */
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer | undefined;
}

export interface Trial {
  /** The exchange the phases saw: notes, consumer, query, responseHeaders. */
  readonly exchange: CoreExchange;
  /** The answer when the gateway answered itself (a refusal or a policy's own reply); undefined when forwarded. */
  readonly reply: Answer | undefined;
  /** What the backend would get; undefined when the gateway answered itself. */
  readonly forwarded: Forwarded | undefined;
  /** The backend's answer through the response and reply phases: what the client receives. */
  respond(answer: BackendAnswer): Answer;
}

export interface PolicyHarness {
  readonly api: ApiDescription;
  /** The whole validated config; the policy's options are config.policies[name]. */
  readonly config: GatewayConfig;
  readonly instance: PolicyInstance;
  /** Holds the policy's own instruments (and nothing else). */
  readonly registry: Registry;
  /** The policy's log lines, through the gateway's own logger set-up (redaction included). */
  readonly logs: LogCapture;
  /** The response headers the policy declares. */
  readonly responseHeaders: readonly string[];
  /** The request through the core's steps and the policy's phases, up to the backend (not included). */
  request(request: HarnessRequest): Promise<Trial>;
  close(): Promise<void>;
}

const descriptions = new Map<string, ApiDescription>();

/** The document compiled once per file and base path, for every harness of the test file. */
function descriptionOf(config: GatewayConfig): ApiDescription {
  const key = `${config.openapi}\n${config.basePath ?? ""}`;
  let api = descriptions.get(key);
  if (api === undefined) {
    api = loadApiDescription(config.openapi, { basePath: config.basePath });
    descriptions.set(key, api);
  }
  return api;
}

/** The config a gateway would run with: the policies of the registry, and this one if it is new. */
function configFor(
  definitions: readonly AnyPolicyDefinition[],
  setting: HarnessSetting,
  own?: { readonly name: string; readonly options: unknown },
): GatewayConfig {
  const given: Readonly<Record<string, unknown>> = { ...setting.config };
  const policies = { ...((given.policies as Record<string, unknown> | undefined) ?? {}) };
  if (own) policies[own.name] = own.options;
  return validateConfig(
    { ...given, openapi: setting.openapi ?? given.openapi ?? DEFAULT_OPENAPI_FILE, policies },
    definitions,
  );
}

interface Created {
  readonly api: ApiDescription;
  readonly instance: PolicyInstance;
  readonly registry: Registry;
  readonly logs: LogCapture;
}

/** One policy created as start-up creates it: its instruments first, then create(). */
function createPolicy(
  definition: AnyPolicyDefinition,
  config: GatewayConfig,
  setting: HarnessSetting,
  responseHeaders: () => readonly string[],
): Created {
  const api = descriptionOf(config);
  const logs = new LogCapture();
  const { logger } = createLogger("debug", logs);
  const { registry } = createMetrics({ defaultMetrics: false });
  const context: PolicyContext = {
    api,
    logger,
    environment: setting.environment ?? "production",
    now: setting.now ?? Date.now,
    responseHeaders,
  };
  const instruments = definition.metrics?.(registry);
  const instance = definition.create(config.policies[definition.name], context, instruments);
  return { api, instance, registry, logs };
}

/**
 * The policy created with `options` as the config writes them (validated, defaults filled in;
 * a bad field throws the start-up error, with its path), ready to judge requests in memory.
 */
export function policyHarness<Options, Instruments>(
  definition: PolicyDefinition<Options, Instruments>,
  options: Partial<Options> = {},
  setting: HarnessSetting = {},
): PolicyHarness {
  const policy = definition as unknown as AnyPolicyDefinition;
  // The registry itself when the policy is one of it, so that its config validator is reused.
  const definitions = registryPolicies.includes(policy) ? registryPolicies : withProbe(policy);
  // As start-up: a code the policy gives another meaning than the catalogue does stops it.
  catalogueOf(definitions);
  const config = configFor(definitions, setting, { name: policy.name, options });
  let declared: readonly string[] = [];
  // As the gateway's: the core's headers and the declared ones (here, this policy's alone).
  const created = createPolicy(policy, config, setting, () => [...CORE_RESPONSE_HEADERS, ...declared]);
  const { api, instance } = created;
  declared = instance.responseHeaders ?? [];
  return {
    ...created,
    config,
    responseHeaders: declared,
    request: runner(policy.name, api, config, instance, declared),
    async close() {
      await instance.close?.();
    },
  };
}

/**
 * The response headers each policy of the registry declares with this config (and the core's,
 * under "core"), read from the policies as the gateway creates them: for a test that must name
 * every header the gateway adds without keeping a list of its own.
 */
export async function declaredResponseHeaders(
  setting: HarnessSetting = {},
  definitions: readonly AnyPolicyDefinition[] = registryPolicies,
): Promise<Readonly<Record<string, readonly string[]>>> {
  const config = configFor(definitions, setting);
  const declared: Record<string, readonly string[]> = { core: CORE_RESPONSE_HEADERS };
  const instances: PolicyInstance[] = [];
  try {
    for (const definition of definitions) {
      const { instance } = createPolicy(definition, config, setting, () => []);
      instances.push(instance);
      declared[definition.name] = instance.responseHeaders ?? [];
    }
  } finally {
    await Promise.all(instances.map((instance) => instance.close?.()));
  }
  return declared;
}

/** The registry with a policy of the test's own (a probe, a policy being written), one list per policy. */
const probes = new WeakMap<AnyPolicyDefinition, readonly AnyPolicyDefinition[]>();
function withProbe(policy: AnyPolicyDefinition): readonly AnyPolicyDefinition[] {
  let definitions = probes.get(policy);
  if (definitions === undefined) {
    definitions = [...registryPolicies.filter((known) => known.name !== policy.name), policy];
    probes.set(policy, definitions);
  }
  return definitions;
}

/** Answers a browser reads for itself, not the page: they are never exposed, so never declared. */
function needsNoDeclaration(name: string): boolean {
  return name === "vary" || name.startsWith("access-control-");
}

function runner(
  name: string,
  api: ApiDescription,
  config: GatewayConfig,
  instance: PolicyInstance,
  declared: readonly string[],
): (request: HarnessRequest) => Promise<Trial> {
  // A policy that throws shows its own stack in the test, not a 500: isolation has tests of its own.
  const rethrow = (_policy: string, _phase: string, _exchange: unknown, error: unknown) => {
    throw error;
  };
  // Headers the policy's reply phases changed, per exchange: the chain holds this policy alone.
  const changedByReply = new WeakMap<Exchange, Set<string>>();
  const noteChanges = (exchange: Exchange, before: OutgoingHttpHeaders, after: OutgoingHttpHeaders) => {
    const changed = changedByReply.get(exchange) ?? new Set<string>();
    for (const header in after) if (after[header] !== before[header]) changed.add(header);
    changedByReply.set(exchange, changed);
  };
  // The gateway's own request side, as both front doors run it (src/pipeline/request-judge.ts).
  const judge = createRequestJudge({
    api,
    policies: [{ name, instance: watchingReplies(instance, noteChanges) }],
    failed: rethrow,
  });
  const replies = createLocalReplies(
    judge.chains,
    () => {},
    () => false,
  );
  const tooLarge = gatewayError(
    "PAYLOAD_TOO_LARGE",
    `the request body is over ${config.server.maxRequestBodyBytes} bytes`,
  );

  /** What the policy added to the answer must be declared. */
  const checkDeclared = (exchange: CoreExchange, extra: readonly string[]) => {
    const added = new Set([...Object.keys(exchange.responseHeaders), ...extra]);
    for (const header of changedByReply.get(exchange) ?? []) added.add(header);
    for (const header of added) {
      if (needsNoDeclaration(header.toLowerCase())) continue;
      assert.ok(
        declared.includes(header.toLowerCase()),
        `policy ${name} added the response header ${header} without declaring it in responseHeaders (it declares: ${declared.join(", ") || "none"})`,
      );
    }
  };

  const refuse = (exchange: CoreExchange, error: GatewayError, close = false): Answer => {
    replies.refuse(exchange, error, close);
    const answer = recorded(exchange);
    if (exchange.req.method !== "HEAD") {
      const body = JSON.parse(answer.body) as ErrorObject;
      assert.ok(
        api.validateError(body),
        `the ${error.code} body is not the interface's Error object: ${answer.body} ${JSON.stringify(api.validateError.errors)}`,
      );
      assert.equal(body.status, answer.status, `the ${error.code} body's status is the answer's`);
    }
    // A core code's headers are the core's (a 405's Allow); a policy's own code carries the policy's.
    checkDeclared(exchange, Object.hasOwn(coreCatalogue, error.code) ? [] : Object.keys(error.headers ?? {}));
    return answer;
  };

  return async (request) => {
    const { req, res } = inMemory(request);
    const exchange = judge.open(req, res as unknown as ServerResponse, request.clientAddress ?? "127.0.0.1");
    const stop = (reply: Answer): Trial => ({
      exchange,
      reply,
      forwarded: undefined,
      respond: () => assert.fail("the gateway answered itself: no request reached the backend"),
    });
    const verdict = judge.head(exchange);
    if (verdict.kind === "refuse") return stop(refuse(exchange, verdict.error, verdict.closeConnection));
    if (verdict.kind === "answer") {
      replies.answerLocally(exchange, verdict.reply);
      checkDeclared(exchange, Object.keys(verdict.reply.headers));
      return stop(recorded(exchange));
    }
    const { chain } = verdict;
    // As the proxy door: the backend's own base path is the upstream's to prepend.
    req.url = verdict.upstreamTarget;
    if (verdict.operation.requestBody !== undefined) {
      // The core's own reading, with its cap: the body phases get what it read.
      if (request.body !== undefined) req.push(Buffer.from(request.body));
      req.push(null);
      const whole = await new Promise<boolean>((resolve) =>
        readBody(
          exchange,
          chain,
          config.server.maxRequestBodyBytes,
          () => resolve(true),
          () => resolve(false),
        ),
      );
      if (!whole) return stop(refuse(exchange, tooLarge, true));
      const bodyRefusal = judge.body(exchange, chain);
      if (bodyRefusal) return stop(refuse(exchange, bodyRefusal));
    }
    return {
      exchange,
      reply: undefined,
      forwarded: { method: req.method ?? "GET", url: req.url, headers: req.headers, body: exchange.body },
      respond(backend) {
        assert.equal(res.status, undefined, "the backend answers a request once");
        const headers = lowerCased(backend.headers ?? {});
        let text = backend.body;
        if (backend.json !== undefined) {
          text = JSON.stringify(backend.json);
          headers["content-type"] ??= "application/json";
        }
        const raw = Buffer.from(text ?? "");
        exchange.upstreamStatus = backend.status;
        const bodyless = req.method === "HEAD" || backend.status === 204 || backend.status === 304;
        // As the core: the body only to a chain that reads it, for a JSON answer under the cap.
        const held =
          (chain.holdsAnswer ? chain.holdsAnswer(exchange) : chain.readsResponseBody) &&
          !bodyless &&
          !backend.oversized &&
          JSON_FAMILY_MEDIA_TYPE.test(headers["content-type"] ?? "");
        const answer: UpstreamAnswer = {
          status: backend.status,
          headers,
          body: held ? { length: raw.length, text: () => raw.toString("utf8") } : undefined,
          oversized: backend.oversized === true,
          fault: undefined,
        };
        const answerRefusal = runResponse(chain, exchange, answer);
        if (answerRefusal) return refuse(exchange, answerRefusal);
        const out: OutgoingHttpHeaders = { ...headers, "content-length": raw.length };
        finishHeaders(exchange, chain, backend.status, out, false);
        res.writeHead(backend.status, out);
        res.end(bodyless ? undefined : raw.toString("utf8"));
        checkDeclared(exchange, []);
        return recorded(exchange);
      },
    };
  };
}

/**
 * The policy as the judge gets it, its reply phases watched: what each changes in an answer's
 * headers is noted, to be checked against what the policy declares. Every other member is the
 * policy's own, called on the policy itself (a class's private fields still work).
 */
function watchingReplies(
  instance: PolicyInstance,
  noteChanges: (exchange: Exchange, before: OutgoingHttpHeaders, after: OutgoingHttpHeaders) => void,
): PolicyInstance {
  return withMembers(instance, {
    forOperation(operation: Operation): OperationPolicy | undefined {
      const phases = instance.forOperation(operation);
      const onReply = phases?.onReply?.bind(phases);
      if (phases === undefined || onReply === undefined) return phases;
      return withMembers(phases, {
        onReply(exchange: Exchange, status: number, headers: OutgoingHttpHeaders) {
          const before = { ...headers };
          onReply(exchange, status, headers);
          noteChanges(exchange, before, headers);
        },
      });
    },
  });
}

/** target as it is, but for the members given; a method of its own is called on target itself. */
function withMembers<T extends object>(target: T, replaced: Partial<T>): T {
  return new Proxy(target, {
    get(object, key) {
      if (Object.hasOwn(replaced, key)) return Reflect.get(replaced, key);
      const value: unknown = Reflect.get(object, key);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
}

/** What the recording response holds, as the client would read it. */
function recorded(exchange: CoreExchange): Answer {
  const res = exchange.res as unknown as RecordingResponse;
  assert.ok(res.status !== undefined, "an answer was written");
  const headers: Record<string, string> = {};
  for (const [header, value] of Object.entries(res.headers)) {
    if (value !== undefined)
      headers[header.toLowerCase()] = Array.isArray(value) ? value.join(", ") : String(value);
  }
  const error =
    exchange.rejection !== undefined && res.body !== "" ? (JSON.parse(res.body) as ErrorObject) : undefined;
  return { status: res.status, headers, body: res.body, error };
}

/** Node's request over a socket that never connected, and a response that records what is written. */
function inMemory(request: HarnessRequest): { req: IncomingMessage; res: RecordingResponse } {
  const req = new IncomingMessage(new Socket());
  req.method = request.method ?? "GET";
  req.url = request.path;
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  req.httpVersion = "1.1";
  const headers = lowerCased(request.headers ?? {});
  headers.host ??= "gateway.test";
  if (
    request.body !== undefined &&
    headers["content-length"] === undefined &&
    headers["transfer-encoding"] === undefined
  ) {
    headers["content-length"] = String(Buffer.byteLength(request.body));
  }
  req.headers = headers;
  req.rawHeaders = Object.entries(headers).flat();
  return { req, res: new RecordingResponse() };
}

function lowerCased(headers: Readonly<Record<string, string>>): Record<string, string> {
  const lower: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) lower[name.toLowerCase()] = value;
  return lower;
}

/** The part of ServerResponse the core's answer steps use, keeping what they write. */
class RecordingResponse extends EventEmitter {
  status: number | undefined = undefined;
  headers: OutgoingHttpHeaders = {};
  body = "";
  readonly writable = true;
  readonly shouldKeepAlive = true;
  get headersSent(): boolean {
    return this.status !== undefined;
  }
  writeHead(status: number, headers: OutgoingHttpHeaders): this {
    assert.equal(this.status, undefined, "one answer per request");
    this.status = status;
    this.headers = { ...headers };
    return this;
  }
  end(body?: string | Buffer): this {
    if (body !== undefined) this.body += body.toString();
    return this;
  }
  destroy(): this {
    return this;
  }
}

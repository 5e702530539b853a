// The contract a policy is written against, and nothing else, in the order a policy meets it:
// it is declared (definePolicy), given its options and a context (PolicyContext, PlanContext),
// returns its phases (PolicyInstance, OperationPolicy), reads and sets one request in each phase
// (Exchange, UpstreamAnswer), and answers with a refusal (declareErrors, GatewayError) or a reply
// of its own (LocalReply). Then what it says before anything starts (PolicyPlan) and the reports
// it serves on the ops port (OpsReport). What only the core uses to hold and run policies (a list
// of policies of any options, their options read back from the config, the chains that call the
// phases) is in src/policy-registry.ts and src/pipeline/.
//
// A policy is a factory: validated options in, and for each operation of the description either
// nothing (it does not apply) or a few phase functions. A phase returns undefined to continue or
// a GatewayError to stop the chain.

import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { JSONSchemaType } from "ajv";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { DocumentDifference } from "./document-diff.ts";
import type { GatewayError, PolicyErrors } from "./errors.ts";
import type { ApiDescription, Operation } from "./openapi.ts";

// --- Declaring a policy ------------------------------------------------------------------------

/** Declares a policy: definePolicy<Options, Instruments>({ name, optionsSchema, metrics, create }). */
export function definePolicy<Options, Instruments = undefined>(
  definition: PolicyDefinition<Options, Instruments>,
): PolicyDefinition<Options, Instruments>;
/** A policy whose options are left untyped: its create() gets them as unknown. */
export function definePolicy(definition: PolicyDefinition<unknown>): PolicyDefinition<unknown>;
export function definePolicy(
  definition: PolicyDefinition<unknown, unknown>,
): PolicyDefinition<unknown, unknown> {
  return definition;
}

/**
 * A policy: its name, its options' schema, its errors, metrics and ops reports, what it plans,
 * and create(), the factory of its phases. Checked at start-up as a whole: bad options, a code
 * that clashes with the catalogue or a throw in create() stop the start, never a request.
 */
export interface PolicyDefinition<Options, Instruments = undefined> {
  /** Its config section (`policies.<name>`) and its name in logs and the plan. */
  readonly name: string;
  /** JSON Schema of the options, with defaults; validated with the rest of the config at start-up. */
  readonly optionsSchema: OptionsSchema<Options>;
  /** Environment variables that set an option: { API_KEYS_FILE: "keysFile" }. */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * The policy's rejection reason and error codes (declareErrors): they join the one catalogue,
   * and the reason is the `reason` label of gateway_rejections_total for every one of them.
   */
  readonly errors?: PolicyErrors;
  /**
   * Registers the policy's own instruments on the gateway's registry (once per registry, before
   * create(), which receives what this returns). Label values from bounded sets, as the core's.
   */
  metrics?(registry: Registry): Instruments;
  /** Reports on the ops port, by path ("/deprecations"): how parts merge and render. */
  readonly opsReports?: Readonly<Record<string, OpsReport<unknown, Options>>>;
  /**
   * What the policy will enforce with these options on this description, without creating it:
   * `npm run plan` prints it and start-up logs its warnings. Throws what create() would for a
   * document or options it cannot use, so that the plan refuses what start-up refuses.
   */
  plan?(options: Options, context: PlanContext): PolicyPlan;
  /**
   * What a candidate document changes that only the policy's options show (a date the config
   * gives where the document has none), beside what the documents' own text shows
   * (document-diff.ts): a reload judges these with the rest, and the change review names whom they
   * hit. Pure; read leniently: a candidate the policy would refuse is refused by its plan.
   */
  compareDocuments?(
    options: Options,
    running: ApiDescription,
    candidate: ApiDescription,
  ): readonly DocumentDifference[];
  /** Called once at start-up with the validated options; a throw stops the start with its message. */
  create(options: Options, context: PolicyContext, instruments: Instruments): PolicyInstance;
}

/**
 * The JSON Schema of a policy's options, which the compiler holds to its Options type (ajv's
 * JSONSchemaType): a property the schema lacks, or types differently, does not compile. An
 * optional option (`T | undefined`) is written `nullable: true`, as JSONSchemaType asks; the
 * config leaves such a field absent, never null (the config's validator drops `nullable`). Only
 * a policy that declares its options `unknown` (a test's probe) writes an unchecked schema.
 */
export type OptionsSchema<Options> = unknown extends Options
  ? Readonly<Record<string, unknown>>
  : JSONSchemaType<Options>;

// --- What it is given ----------------------------------------------------------------------------

/**
 * What a plan may read: the description, the clock and the environment. Never another policy's
 * options: a fact two policies need (a page size, a deprecation date) is the document's.
 */
export interface PlanContext {
  readonly api: ApiDescription;
  /** "production", "staging", or "demo" when the bundled demo backend is served. */
  readonly environment: string;
  /** Milliseconds since the epoch; injectable so tests never wait for a real date. */
  now(): number;
}

/** What create() is given besides its options: the plan's context, and the gateway's logger. */
export interface PolicyContext extends PlanContext {
  readonly logger: Logger;
  /**
   * Every response header the core and the policies add to answers. Complete once every policy
   * is created: read it while serving, not in create().
   */
  responseHeaders(): readonly string[];
}

// --- What it returns: its phases -----------------------------------------------------------------

/** What create() returns: the policy's phases for every request and per operation, and its hooks. */
export interface PolicyInstance {
  /**
   * Every request with a canonical path, before routing and before any operation's phases: a
   * policy that must act even where no operation matches (CORS preflights carry no key and use
   * OPTIONS) returns an answer here, or sets exchange.responseHeaders for whatever answer follows.
   */
  onArrival?(exchange: Exchange): GatewayError | LocalReply | undefined;
  /** The phases for one operation of the description, asked once at start-up; undefined: none. */
  forOperation(operation: Operation): OperationPolicy | undefined;
  /**
   * Whether a value a client sent where the gateway repeats it (its X-Request-Id, echoed in the
   * answer and logged on every line) is a credential this policy knows: the core then makes an id
   * of its own. Called only for a request that carries one.
   */
  recognizesCredential?(value: string): boolean;
  /**
   * The response headers this policy may add to answers (lower case), so that a policy telling
   * clients what they may read (CORS) names them without knowing this one.
   */
  readonly responseHeaders?: readonly string[];
  /**
   * The request headers this policy sets, removes or judges for the backend (lower case): a
   * header parameter the document declares with a name that folds onto one of them (x_consumer
   * for x-consumer) never reaches the backend.
   */
  readonly requestHeaders?: readonly string[];
  /**
   * This process's part of each of the policy's ops reports (definition.opsReports), by path; a
   * promise when the part is built in slices.
   */
  readonly collectReports?: Readonly<Record<string, () => unknown>>;
  /**
   * The operator asked for a reload (SIGHUP to the process or to a cluster primary): read again
   * what the policy loaded at create() (a key file). The core calls it; no policy listens to the
   * process itself. `why` is for the log line.
   */
  reload?(why: string): void | Promise<void>;
  /**
   * A reload is judging a candidate with breaking differences: what the policy remembers says
   * whom each would break (the usage policy). One line per breaking change, logged as advice by
   * the reload, never a reason to refuse; an empty list says nothing.
   */
  adviseOnChange?(candidate: ApiDescription, differences: readonly DocumentDifference[]): readonly string[];
  /** The gateway is closing: release what create() opened (timers, files). */
  close?(): void | Promise<void>;
}

/**
 * One operation's phases, in the order a request meets them; each is optional. Synchronous: a
 * phase returns undefined to continue or a GatewayError to stop the chain, in the same tick.
 */
export interface OperationPolicy {
  /** Headers, path and query only: the body has not been read. */
  onRequest?(exchange: Exchange): GatewayError | undefined;
  /** The request body has been buffered into exchange.body. */
  onRequestBody?(exchange: Exchange): GatewayError | undefined;
  /**
   * Set when onResponse needs the body: the core then buffers JSON answers up to the cap. A
   * function decides for each request, once, before it is forwarded (a sampled check): false lets
   * this request's answer stream unless another policy reads it. onResponse runs either way.
   */
  readonly readsResponseBody?: boolean | ((exchange: Exchange) => boolean);
  /** The backend's answer, before the client gets anything: a GatewayError replaces it. */
  onResponse?(exchange: Exchange, answer: UpstreamAnswer): GatewayError | undefined;
  /** Every answer for this operation, whoever produced it (policy, core or backend): add headers. */
  onReply?(exchange: Exchange, status: number, headers: OutgoingHttpHeaders): void;
}

// --- What a phase reads and sets -----------------------------------------------------------------

/**
 * One request on its way through the gateway, as a policy sees it: what the core established,
 * read-only, and the few things a policy may set, each through its own setter. Node's request
 * and response are not here: a policy reads the request's method and headers, changes what the
 * backend gets only through setUpstreamHeader and setQueryParameter, and answers only by
 * returning an error or a reply. The core's own bookkeeping (the rejection, the backend's
 * timings, whether the answer is finished) is not here either.
 */
export interface Exchange {
  /** The request method, upper case as the client sent it. */
  readonly method: string;
  /** The request's headers (lower-case names), as the backend will get them so far. */
  readonly headers: Readonly<IncomingHttpHeaders>;
  /** The request target as the client sent it (req.url is rewritten for the backend). */
  readonly url: string;
  /** The client's X-Request-Id when the gateway kept it, else one of its own: on every log line. */
  readonly requestId: string;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
  /** The client's address: the peer, or behind trusted proxies the nearest untrusted X-Forwarded-For hop. */
  readonly clientAddress: string;
  /** The operation the router matched (undefined in onArrival, and for a path no operation has). */
  readonly operation: Operation | undefined;
  /** The path's parameters by name, as the router matched them (decoded). */
  readonly pathParams: Readonly<Record<string, string>>;
  /** Decoded query parameters. */
  readonly query: ReadonlyMap<string, string>;
  /** The authenticated caller's name (never the key). */
  readonly consumer: string | undefined;
  /**
   * The request's W3C trace id (32 hex digits) when it has a trace context: the client's valid
   * traceparent, or the gateway's own span when it exports traces. For a log line to name it.
   */
  readonly traceId: string | undefined;
  /** The span the request is logged under (16 hex digits): the gateway's server span, else the client's. */
  readonly spanId: string | undefined;
  /** The raw request body, for operations that declare one (from onRequestBody on). */
  readonly body: Buffer | undefined;
  /** Headers added to whatever answer the client receives: a policy adds its own. */
  readonly responseHeaders: Record<string, string>;
  /**
   * Facts for the access log line (e.g. a limit adjustment), flat and small: a policy adds its
   * own. They are written under `notes` in the line, never beside the core's fields, so a note
   * can never replace the status or the consumer.
   */
  readonly notes: Record<string, string | number | boolean>;
  /**
   * Sets a request header for the backend (lower-case name), or removes it with undefined: how a
   * policy says who the consumer is or which credential the backend gets.
   */
  setUpstreamHeader(name: string, value: string | undefined): void;
  /** Sets a query parameter for the backend: the core then sends the query as the gateway holds it. */
  setQueryParameter(name: string, value: string): void;
  /** Names the authenticated caller (logged, counted, given to later phases). */
  identify(consumer: string): void;
  /**
   * text with every key in it replaced by [redacted] (src/redaction.ts): the request's own
   * credential and any key a policy recognises. Every text a policy writes that may hold a
   * client's or a backend's words goes through it, before it is cut short.
   */
  redact(text: string): string;
}

/** The backend's answer as the response phase sees it. */
export interface UpstreamAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The whole decoded body when it was JSON and buffered; undefined when streamed or empty. */
  readonly body: AnswerBody | undefined;
  /** True when the body went over the buffering cap (body then holds nothing). */
  readonly oversized: boolean;
  /** A problem the core found reading the answer (e.g. undecodable compression). */
  readonly fault: string | undefined;
}

/** An answer body the gateway holds whole. Only for the phase it is given to: freed once sent. */
export interface AnswerBody {
  /** In bytes. */
  readonly length: number;
  /** Decoded as UTF-8, anew on each call. */
  text(): string;
}

// --- What a phase answers with -------------------------------------------------------------------

/**
 * A refusal: what a phase returns to stop the chain, made by the policy's declared errors
 * (`errors.error("CODE")`); the client gets the interface's Error object with its status.
 */
export type { GatewayError, PolicyErrors } from "./errors.ts";

/**
 * Declares a policy's rejection reason and error codes: `const errors = declareErrors("auth",
 * { MISSING_API_KEY: { status: 401, message: "..." } })`, then `errors.error("MISSING_API_KEY")`.
 */
export { declareErrors } from "./errors.ts";

/** A policy's answer that is not an error (e.g. a CORS preflight): a status and headers, no body. */
export interface LocalReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Why the policy answered, for the access log (bounded, like a rejection reason). */
  readonly reason: string;
}

// --- What it says before anything starts: its plan -----------------------------------------------

/** A policy's plan: built by the same functions create() uses, so it says what create() will do. */
export interface PolicyPlan {
  /** What it does to the operation; undefined when it does nothing there. */
  operation?(operation: Operation): OperationPlanFacts | undefined;
  readonly warnings?: readonly PlanWarning[];
}

/**
 * What a policy will do with one operation, said before anything starts: `npm run plan` prints it.
 * The text lines are for people; data is the same as JSON, under the policy's name.
 */
export interface OperationPlanFacts {
  /** The policy lets anyone call the operation, with no credential (the plan lists these first). */
  readonly public?: boolean;
  /**
   * The query parameters the policy may set for the backend (setQueryParameter): a proxy in front
   * of decision mode that cannot rewrite the target leaves them as the client sent them, and the
   * plan says so.
   */
  readonly setsQuery?: readonly string[];
  readonly text: readonly string[];
  readonly data: unknown;
}

/**
 * Something the document or the config asks for that the gateway will not do as asked: logged at
 * start-up as one warn line (msg: message, warning: the code), and listed by the plan.
 */
export interface PlanWarning {
  /** Stable, for log filters: "security-not-bearer". */
  readonly warning: string;
  readonly message: string;
  /** The operationIds it concerns. */
  readonly operations: readonly string[];
  /** Config lines that settle it (e.g. the date a deprecation lacks). */
  readonly fixes?: readonly string[];
}

// --- The reports it serves on the ops port -------------------------------------------------------

/**
 * A report a policy serves on the ops port (e.g. /deprecations). Every serving process collects
 * its own part (PolicyInstance.collectReports), plain JSON that may cross process boundaries;
 * merging parts and writing the result are pure functions of the parts and the policy's options,
 * declared with the policy, so that a cluster primary merges its workers' parts, like /metrics,
 * without running the policy.
 */
export interface OpsReport<Part = unknown, Options = unknown, Prepared = unknown> {
  /** Parts of every process (or just this one) into one. */
  merge(parts: readonly Part[], options: Options): Part;
  /**
   * Turns the merged report into what render reads, in slices (src/slices.ts), for a report that
   * grows with what clients do (a row per caller). The prepared report answers the requests of
   * the next `reuseForMs` too: a snapshot, so a client asking in a loop does not rebuild it each
   * time. Without it, render reads the merged report, built for each request.
   */
  prepare?(report: Part, options: Options): Promise<PreparedReport<Prepared>>;
  /**
   * Writes the merged (or prepared) report; the query, decoded, carries options such as
   * ?format=csv, and the request's headers what the client accepts (a browser asks for text/html).
   * Its work must not grow with the report: a large one is paged or cut to its top rows.
   */
  render(
    report: Prepared,
    query: ReadonlyMap<string, string>,
    res: ServerResponse,
    headers: IncomingHttpHeaders,
  ): void;
}

/** A prepared report, and how long it may answer requests before it is prepared again. */
export interface PreparedReport<Prepared> {
  readonly prepared: Prepared;
  readonly reuseForMs: number;
}

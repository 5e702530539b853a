// What a cluster primary and its workers say to each other over IPC: the setup a worker starts
// with, the connections the primary hands over (and the worker's word that it took each), the
// primary's questions (collect your metrics, your part of a report), the workers' answers and
// what they count, sent unasked, and the two orders (shut down, reload). Plain JSON, as IPC
// carries it, plus a connection's socket.
import type { Worker } from "node:cluster";
import type { GatewayConfig } from "../config-schema.ts";
import type { ReloadResult } from "../document-reload.ts";
import type { DocumentSource } from "../openapi/document-source.ts";

/** The environment variable that carries the primary's setup to a worker. */
export const WORKER_SETUP = "PETSTORE_GATEWAY_WORKER";
export const COLLECT = "petstore-gateway:collect";
export const COLLECTED = "petstore-gateway:collected";
export const SHUTDOWN = "petstore-gateway:shutdown";
export const RELOAD = "petstore-gateway:reload";
/** Worker to primary: it serves; hand it connections. */
export const READY = "petstore-gateway:ready";
/** Primary to worker, with the socket of a connection the primary accepted. */
export const CONNECTION = "petstore-gateway:connection";
/** Worker to primary: whether it took the connection `id` (false: it no longer takes any). */
export const TAKEN = "petstore-gateway:taken";
/** Worker to primary, unasked: its counts so far, kept should it die before the next scrape. */
export const COUNTED = "petstore-gateway:counted";
/** Worker to primary, once it listens for orders: send me the document's committed files. */
export const DOCUMENT_WANTED = "petstore-gateway:document-wanted";
/** Primary to worker: the committed files, which the worker compiles and serves (never reading them). */
export const DOCUMENT = "petstore-gateway:document";
/** Primary to worker: compile and judge these files, keep the candidate, answer DOCUMENT_PREPARED. */
export const DOCUMENT_PREPARE = "petstore-gateway:document-prepare";
export const DOCUMENT_PREPARED = "petstore-gateway:document-prepared";
/** Primary to worker: the candidate of this hash serves from now on (every worker prepared it). */
export const DOCUMENT_COMMIT = "petstore-gateway:document-commit";
/** Primary to worker: drop the candidate of this hash (some worker could not prepare it). */
export const DOCUMENT_ABORT = "petstore-gateway:document-abort";

export interface DocumentMessage {
  readonly type: typeof DOCUMENT;
  readonly source: DocumentSource;
}
export interface DocumentPrepareMessage {
  readonly type: typeof DOCUMENT_PREPARE;
  readonly id: number;
  readonly source: DocumentSource;
  readonly why: string;
}
export interface DocumentPreparedMessage {
  readonly type: typeof DOCUMENT_PREPARED;
  readonly id: number;
  readonly result: ReloadResult;
  readonly reason?: string;
  /** The differences from the running version, one line each, breaking ones first. */
  readonly differences: readonly string[];
}
export interface DocumentDecisionMessage {
  readonly type: typeof DOCUMENT_COMMIT | typeof DOCUMENT_ABORT;
  readonly sha256: string;
  readonly why: string;
}

/** The part of the setup that crosses to a worker (the policies are the worker's own import). */
export interface WorkerSetup {
  /** Validated by the primary; the worker validates it again with its own policy list. */
  readonly config: GatewayConfig;
  readonly upstreamUrl: string;
  readonly environment: string;
  /** The public port, which the primary listens on (for the worker's own record). */
  readonly port: number;
}

export interface ConnectionMessage {
  readonly type: typeof CONNECTION;
  readonly id: number;
}
export interface TakenMessage {
  readonly type: typeof TAKEN;
  readonly id: number;
  readonly taken: boolean;
}
export interface CountedMessage {
  readonly type: typeof COUNTED;
  readonly metrics: MetricsPart;
  /** A report's path, and this worker's part of it. */
  readonly reports: readonly (readonly [string, unknown])[];
}

export type CollectRequest =
  | { readonly what: "metrics" }
  | { readonly what: "report"; readonly path: string };
export type CollectMessage = CollectRequest & { readonly type: typeof COLLECT; readonly id: number };
export interface CollectedMessage {
  readonly type: typeof COLLECTED;
  readonly id: number;
  readonly part?: unknown;
  readonly error?: string;
}

/** One process's metrics as registry.getMetricsAsJSON() gives them. */
export type MetricsPart = readonly MetricJson[];
export interface MetricJson {
  readonly name: string;
  readonly type: string;
  readonly aggregator: string;
  readonly help: string;
  readonly values: readonly unknown[];
}

/** The type of a message, if it is one of ours. */
export function typeOf(message: unknown): unknown {
  return (message as { type?: unknown } | null)?.type;
}

/** A message that may not arrive (the worker may be on its way out). */
export function tell<Message extends { readonly type: string }>(worker: Worker, message: Message): void {
  if (worker.isConnected()) worker.send(message, (error: Error | null) => void error);
}

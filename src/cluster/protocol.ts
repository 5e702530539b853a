// What a cluster primary and its workers say to each other over IPC: the setup a worker starts
// with, the connections the primary hands over (and the worker's word that it took each), the
// primary's questions (collect your metrics, your part of a report), the workers' answers and
// what they count, sent unasked, and the two orders (shut down, reload). Plain JSON, as IPC
// carries it, plus a connection's socket.
import type { Worker } from "node:cluster";
import type { GatewayConfig } from "../config-schema.ts";

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
export function tell(worker: Worker, message: { readonly type: string }): void {
  if (worker.isConnected()) worker.send(message, (error: Error | null) => void error);
}

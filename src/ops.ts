// The ops port: what operators scrape and probe. Never served on the public port.
// Where the numbers come from is a source: this process alone, or (src/cluster.ts) every worker
// of a process group, collected over IPC and merged, so a scrape sees one consistent set.
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { errorBody, type GatewayError, gatewayError } from "./errors.ts";
import type { Metrics } from "./metrics.ts";
import type { OpsReport } from "./policy.ts";

const NO_SUCH_ENDPOINT = gatewayError("NOT_FOUND", "No such ops endpoint");
const READ_ONLY = gatewayError("METHOD_NOT_ALLOWED", "Ops endpoints are read-only");
// A worker that does not answer the primary in time, or a collector that throws.
const REPORT_FAILED = gatewayError("INTERNAL_ERROR", "The report could not be collected");
const METRICS_FAILED = gatewayError("INTERNAL_ERROR", "Metrics could not be collected");

type OpsHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => void;

export interface OpsSource {
  /** The Prometheus text exposition of every process serving requests. */
  metrics(): Promise<string>;
  readonly contentType: string;
  /** Every serving process's part of a report (report.collect() in each). */
  reportParts(path: string, report: OpsReport): Promise<unknown[]>;
}

export interface OpsOptions {
  /** The policies' reports, by path (e.g. "/deprecations"). */
  readonly reports: ReadonlyMap<string, OpsReport>;
  /** The document compiled, the keys loaded, not draining. */
  isReady(): boolean;
  readonly source: OpsSource;
}

/** This process's own metrics and report parts. */
export function localOpsSource(metrics: Metrics): OpsSource {
  return {
    metrics: () => metrics.registry.metrics(),
    contentType: metrics.registry.contentType,
    reportParts: async (_path, report) => [report.collect()],
  };
}

export function createOpsHandler(options: OpsOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { source } = options;
  const routes = new Map<string, OpsHandler>();
  for (const [path, report] of options.reports) {
    routes.set(path, (_req, res, url) => {
      source
        .reportParts(path, report)
        .then((parts) => report.render(report.merge(parts), url, res))
        .catch(() => failed(res, REPORT_FAILED));
    });
  }
  // Liveness: the process answers. Nothing else, so a slow backend never gets a replica killed.
  routes.set("/healthz", (_req, res) => sendJson(res, 200, { status: "ok" }));
  routes.set("/readyz", (_req, res) => {
    const ready = options.isReady();
    sendJson(res, ready ? 200 : 503, { status: ready ? "ready" : "not ready" });
  });
  routes.set("/metrics", (_req, res) => {
    source
      .metrics()
      .then((text) => {
        res.writeHead(200, { "content-type": source.contentType, "cache-control": "no-store" });
        res.end(text);
      })
      .catch(() => failed(res, METRICS_FAILED));
  });
  return (req, res) => {
    const url = new URL(req.url ?? "/", "http://ops.invalid");
    const route = routes.get(url.pathname);
    if (!route) return sendError(res, NO_SUCH_ENDPOINT);
    if (req.method !== "GET" && req.method !== "HEAD") return sendError(res, READ_ONLY);
    route(req, res, url);
  };
}

/** The ops server around a handler (not listening): a malformed probe only loses its socket. */
export function createOpsServer(handler: (req: IncomingMessage, res: ServerResponse) => void): http.Server {
  const server = http.createServer(handler);
  server.on("clientError", (_error, socket) => socket.destroy());
  return server;
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  writeJson(res, status, JSON.stringify(value));
}

/** An error of the catalogue: its body is the interface's Error object, as on the public port. */
export function sendError(res: ServerResponse, error: GatewayError): void {
  writeJson(res, error.status, errorBody(error), error.headers);
}

function writeJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers?: Readonly<Record<string, string>>,
): void {
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

function failed(res: ServerResponse, error: GatewayError): void {
  if (!res.headersSent) sendError(res, error);
}

// The ops port: what operators scrape and probe. Never served on the public port.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Metrics } from "./metrics.ts";
import type { OpsReport, PolicyInstance } from "./policy.ts";

type OpsHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => void;

export interface OpsOptions {
  readonly metrics: Metrics;
  isReady(): boolean;
  readonly policies: readonly PolicyInstance[];
}

export function createOpsHandler(options: OpsOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const routes = new Map<string, OpsHandler>();
  for (const policy of options.policies) {
    for (const [path, report] of Object.entries(policy.opsReports ?? {})) {
      routes.set(path, (_req, res, url) => serveReport(report, url, res));
    }
  }
  routes.set("/healthz", (_req, res) => sendJson(res, 200, { status: "ok" }));
  routes.set("/readyz", (_req, res) => {
    const ready = options.isReady();
    sendJson(res, ready ? 200 : 503, { status: ready ? "ready" : "not ready" });
  });
  routes.set("/metrics", (_req, res) => {
    const { registry } = options.metrics;
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { "content-type": registry.contentType });
        res.end(text);
      },
      () =>
        sendJson(res, 500, {
          code: "METRICS_FAILED",
          message: "metrics could not be collected",
          status: 500,
        }),
    );
  });
  return (req, res) => {
    const url = new URL(req.url ?? "/", "http://ops.invalid");
    const route = routes.get(url.pathname);
    if (!route)
      return sendJson(res, 404, { code: "NOT_FOUND", message: "No such ops endpoint", status: 404 });
    if (req.method !== "GET" && req.method !== "HEAD") {
      return sendJson(res, 405, {
        code: "METHOD_NOT_ALLOWED",
        message: "Ops endpoints are read-only",
        status: 405,
      });
    }
    route(req, res, url);
  };
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function serveReport(report: OpsReport, url: URL, res: ServerResponse): void {
  report.render(report.merge([report.collect()]), url, res);
}

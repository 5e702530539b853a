// The ops port: what operators scrape and probe. Never served on the public port.
// Where the numbers come from is a source: this process alone, or (src/cluster/) every worker
// of a process group, collected over IPC and merged, so a scrape sees one consistent set.
// The ops port is the edge too: its target is read as the public port reads one, and an
// endpoint that fails answers 500 and is logged; it never ends the process.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { MetricsPart } from "./cluster/protocol.ts";
import { type GatewayError, gatewayError } from "./errors.ts";
import type { Metrics } from "./metrics.ts";
import {
  asksForOpenMetrics,
  OPENMETRICS_CONTENT_TYPE,
  openMetricsText,
  PROMETHEUS_CONTENT_TYPE,
} from "./open-metrics.ts";
import type { OpsToken } from "./ops-token.ts";
import { canonicalTarget, parseQuery } from "./pipeline/canonical-request.ts";
import type { PreparedReport } from "./policy.ts";
import type { AnyPolicyDefinition } from "./policy-registry.ts";
import { markOwnAnswer, sendError, sendJson, sendOwnAnswer } from "./replies.ts";

const NO_SUCH_ENDPOINT = gatewayError("NOT_FOUND", "No such ops endpoint");
const READ_ONLY = gatewayError("METHOD_NOT_ALLOWED", "Ops endpoints are read-only");
// A worker that does not answer the primary in time, or a collector that throws.
const REPORT_FAILED = gatewayError("INTERNAL_ERROR", "The report could not be collected");
const METRICS_FAILED = gatewayError("INTERNAL_ERROR", "Metrics could not be collected");
const ENDPOINT_FAILED = gatewayError("INTERNAL_ERROR", "The ops endpoint failed");

interface OpsRoute {
  run(res: ServerResponse, query: ReadonlyMap<string, string>, req: IncomingMessage): void | Promise<void>;
  /** What the client gets when run throws or rejects. */
  readonly failure: GatewayError;
}

export interface OpsSource {
  /** The Prometheus text exposition of every process serving requests. */
  metrics(): Promise<string>;
  /** The same as OpenMetrics, with the exemplars (src/open-metrics.ts). */
  openMetrics(): Promise<string>;
  /** Every serving process's part of a report (the policy's collectReports[path] in each). */
  reportParts(path: string): Promise<unknown[]>;
}

/** A policy's report as the ops port serves it: its merge and render, bound to the policy's options. */
export interface ServedReport {
  merge(parts: readonly unknown[]): unknown;
  prepare?(report: unknown): Promise<PreparedReport<unknown>>;
  render(
    report: unknown,
    query: ReadonlyMap<string, string>,
    res: ServerResponse,
    headers: IncomingHttpHeaders,
  ): void;
}

/** Every policy's reports, by path: data and functions only, nothing of a running policy. */
export function reportsOf(
  policies: readonly AnyPolicyDefinition[],
  configuredOptions: Readonly<Record<string, unknown>>,
): ReadonlyMap<string, ServedReport> {
  const reports = new Map<string, ServedReport>();
  for (const policy of policies) {
    const options = configuredOptions[policy.name];
    for (const [path, report] of Object.entries(policy.opsReports ?? {})) {
      const { prepare } = report;
      reports.set(path, {
        merge: (parts) => report.merge(parts, options),
        ...(prepare && { prepare: (merged: unknown) => prepare(merged, options) }),
        render: report.render,
      });
    }
  }
  return reports;
}

export interface OpsOptions {
  /** The policies' reports, by path (e.g. "/deprecations"). */
  readonly reports: ReadonlyMap<string, ServedReport>;
  /** The document compiled, the keys loaded, not draining. */
  isReady(): boolean;
  readonly source: OpsSource;
  /** Where an endpoint that fails is logged. */
  readonly logger: Logger;
  /** Set: every path but the probes' needs this bearer token (opsTokenFile). */
  readonly token?: OpsToken | undefined;
  /** With a token, /metrics is served without it (opsMetricsOpen). */
  readonly metricsOpen?: boolean;
}

/** What the kubelet (and the image's HEALTHCHECK) probe: never behind the token, they send none. */
const PROBES: ReadonlySet<string> = new Set(["/healthz", "/readyz"]);
const MISSING_TOKEN = gatewayError("MISSING_OPS_TOKEN", undefined, { "www-authenticate": "Bearer" });
const INVALID_TOKEN = gatewayError("INVALID_OPS_TOKEN", undefined, {
  "www-authenticate": 'Bearer error="invalid_token"',
});

/** This process's own metrics and report parts. */
export function localOpsSource(metrics: Metrics, collectReport: (path: string) => unknown): OpsSource {
  return {
    metrics: () => metrics.registry.metrics(),
    openMetrics: async () =>
      openMetricsText([(await metrics.registry.getMetricsAsJSON()) as unknown as MetricsPart]),
    reportParts: async (path) => [await collectReport(path)],
  };
}

export function createOpsHandler(options: OpsOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { source, logger, token } = options;
  // Which paths need the token: asked before the routes, so that without it an unknown path and
  // a report look alike (a 401 names no endpoint).
  const open = new Set(PROBES);
  if (options.metricsOpen) open.add("/metrics");
  const routes = new Map<string, OpsRoute>();
  const heavyStep = oneHeavyStepPerTurn();
  for (const [path, report] of options.reports) {
    const { prepare } = report;
    const current = prepare
      ? snapshot(async () => prepare(report.merge(await source.reportParts(path))))
      : async () => report.merge(await source.reportParts(path));
    routes.set(path, {
      failure: REPORT_FAILED,
      run: async (res, query, req) => {
        const prepared = await current();
        await heavyStep();
        report.render(prepared, query, res, req.headers);
      },
    });
  }
  // Liveness: the process answers. Nothing else, so a slow backend never gets a replica killed.
  routes.set("/healthz", { failure: ENDPOINT_FAILED, run: (res) => sendJson(res, 200, { status: "ok" }) });
  routes.set("/readyz", {
    failure: ENDPOINT_FAILED,
    run: (res) => {
      const ready = options.isReady();
      sendJson(res, ready ? 200 : 503, { status: ready ? "ready" : "not ready" });
    },
  });
  routes.set("/metrics", {
    failure: METRICS_FAILED,
    run: async (res, _query, req) => {
      await heavyStep();
      // Prometheus text unless the scraper prefers OpenMetrics (Prometheus does, for exemplars).
      const open = asksForOpenMetrics(req.headers.accept);
      const text = open ? await source.openMetrics() : await source.metrics();
      sendOwnAnswer(
        res,
        200,
        { "content-type": open ? OPENMETRICS_CONTENT_TYPE : PROMETHEUS_CONTENT_TYPE, vary: "accept" },
        text,
      );
    },
  });
  // What this port serves, for whoever finds it without the docs.
  const endpoints = { endpoints: ["/", ...routes.keys()].sort() };
  routes.set("/", { failure: ENDPOINT_FAILED, run: (res) => sendJson(res, 200, endpoints) });
  const failed = (res: ServerResponse, endpoint: string, reply: GatewayError, error: unknown) => {
    logger.error(
      {
        endpoint,
        error: error instanceof Error ? { message: error.message, stack: error.stack } : String(error),
      },
      "ops endpoint failed",
    );
    if (!res.headersSent) sendError(res, reply);
    // Half an answer must not look whole.
    else res.destroy();
  };
  return (req, res) => {
    let endpoint = "";
    let failure = ENDPOINT_FAILED;
    // Every answer of this port is the gateway's own, a policy's report included.
    markOwnAnswer(res);
    try {
      const target = canonicalTarget(req);
      if (target.refusal !== undefined) return sendError(res, target.refusal, target.closeConnection);
      if (token !== undefined && !open.has(target.path)) {
        const { authorization } = req.headers;
        if (authorization === undefined) return sendError(res, MISSING_TOKEN);
        if (!token.accepts(authorization)) return sendError(res, INVALID_TOKEN);
      }
      const route = routes.get(target.path);
      if (!route) return sendError(res, NO_SUCH_ENDPOINT);
      if (req.method !== "GET" && req.method !== "HEAD") return sendError(res, READ_ONLY);
      const query = new Map<string, string>();
      const badQuery = parseQuery(target.rawQuery, query);
      if (badQuery !== undefined) return sendError(res, badQuery);
      endpoint = target.path;
      failure = route.failure;
      route.run(res, query, req)?.catch((error: unknown) => failed(res, endpoint, failure, error));
    } catch (error) {
      failed(res, endpoint, failure, error);
    }
  };
}

/**
 * Writing a page of a report or the metrics takes a few milliseconds each; many clients asking
 * at once would have them all run in one turn of the loop, which holds the loop for their sum
 * (nine clients hammering /metrics held it 48 ms). Each waits its turn here: at most one starts
 * per turn of the loop, so probes and timers run between them whatever the number of clients.
 */
function oneHeavyStepPerTurn(): () => Promise<void> {
  let busy = false;
  const waiting: (() => void)[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next === undefined) {
      busy = false;
      return;
    }
    next();
    setImmediate(release);
  };
  return () =>
    new Promise<void>((resolve) => {
      if (busy) {
        waiting.push(resolve);
        return;
      }
      busy = true;
      resolve();
      // The next one in the next turn, not in this turn's check phase.
      setImmediate(() => setImmediate(release));
    });
}

/**
 * A prepared report shared by the requests of its reuse time, and by those that arrive while it
 * is built: clients asking in a loop cost one build per reuse time, whatever their number.
 */
function snapshot(build: () => Promise<PreparedReport<unknown>>): () => Promise<unknown> {
  let held: { readonly prepared: unknown; readonly until: number } | undefined;
  let building: Promise<unknown> | undefined;
  return () => {
    if (held !== undefined && performance.now() < held.until) return Promise.resolve(held.prepared);
    building ??= build()
      .then(({ prepared, reuseForMs }) => {
        held = { prepared, until: performance.now() + reuseForMs };
        return prepared;
      })
      .finally(() => {
        building = undefined;
      });
    return building;
  };
}

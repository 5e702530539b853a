// bare-proxy.ts with only its upstream client swapped: an undici Pool with the gateway's own
// settings (src/proxy.ts upstreamPoolOptions, from the config's defaults) driven by `dispatch`
// with a handler, as the gateway's upstream leg is. Everything else is bare-proxy.ts's, line for
// line: the targets `bare-undici` (no flag) and `must-undici` (--must-do) are `bare` and
// `bare-must` on undici, so that what the client change is worth and what the gateway adds on top
// of the same client are both measured.
//   node scripts/bench/undici-proxy.ts --target http://127.0.0.1:PORT [--check | --must-do --key-sha256 HEX]
// Prints one JSON line {event:"listening", url} on stdout.
import { hash, timingSafeEqual } from "node:crypto";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { type Dispatcher, Pool } from "undici";
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import { createMetrics, statusLabel } from "../../src/metrics.ts";
import { loadApiDescription } from "../../src/openapi.ts";
import { upstreamPoolOptions } from "../../src/proxy.ts";
import { accessLogToDevNull, answerValidator, DEADLINE_MS } from "./must-do-parts.ts";

const { values } = parseArgs({
  options: {
    target: { type: "string" },
    check: { type: "boolean", default: false },
    "must-do": { type: "boolean", default: false },
    "key-sha256": { type: "string" },
  },
});
if (!values.target) throw new Error("--target is required");
const mustDo = values["must-do"];
const check = values.check || mustDo;
if (mustDo && !values["key-sha256"]) throw new Error("--must-do needs --key-sha256");

const target = new URL(values.target);
const basePath = target.pathname.replace(/\/+$/, "");
const pool = new Pool(target.origin, upstreamPoolOptions(validateConfig({}, policies).upstream));
// What http-proxy-3 drops or undici refuses: the hop-by-hop headers.
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "expect",
  "te",
  "trailer",
]);

/** One request to the backend: streamed through (bare), or held, checked and sent (check). */
class Forwarded implements Dispatcher.DispatchHandler {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  status = 0;
  headers: IncomingMessage["headers"] = {};
  chunks: Buffer[] = [];
  constructor(req: IncomingMessage, res: ServerResponse) {
    this.req = req;
    this.res = res;
  }
  onRequestStart(): void {}
  onResponseStart(
    controller: Dispatcher.DispatchController,
    status: number,
    headers: IncomingMessage["headers"],
  ): void {
    this.status = status;
    this.headers = headers;
    if (check) return;
    this.res.writeHead(status, endToEnd(headers, undefined));
    this.res.on("drain", () => controller.resume());
  }
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (check) this.chunks.push(chunk);
    else if (!this.res.write(chunk)) controller.pause();
  }
  onResponseEnd(): void {
    if (check) checkAndSend(this);
    else this.res.end();
  }
  onResponseError(): void {
    const res = this.res;
    clearTimeout((res as Timed)[DEADLINE]);
    // Not expected under the benchmark; answer so the load generator counts it as non-2xx.
    if (!res.headersSent) {
      res.writeHead(502, { "content-type": "application/json" });
      res.end('{"code":"UPSTREAM_UNAVAILABLE","message":"bad gateway","status":502}');
    } else res.destroy();
  }
}

function forward(req: IncomingMessage, res: ServerResponse): void {
  const headers: IncomingMessage["headers"] = {};
  for (const name in req.headers) if (!HOP_BY_HOP.has(name)) headers[name] = req.headers[name];
  headers.host = target.host;
  pool.dispatch(
    {
      path: `${basePath}${req.url ?? "/"}`,
      method: (req.method ?? "GET") as Dispatcher.HttpMethod,
      headers,
      // The benchmark's one body (createPet) is small: streamed as it comes, as http-proxy-3 does.
      body: req.method === "POST" || req.method === "PUT" ? req : null,
    },
    new Forwarded(req, res),
  );
}

// The same server limits as the gateway's defaults, so connection handling costs the same.
const server = http.createServer(
  { keepAliveTimeout: 75_000, headersTimeout: 10_000, requestTimeout: 30_000, maxHeaderSize: 16_384 },
  mustDo ? admit : forward,
);
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ event: "listening", url: `http://127.0.0.1:${port}` })}\n`);
});
// Exit through process.exit so that --cpu-prof writes its profile.
process.once("SIGTERM", () => process.exit(0));
process.once("SIGINT", () => process.exit(0));

// The benchmark's three requests, each with its answer's validator; no router beyond that.
const api = loadApiDescription(join(resolve(import.meta.dirname, "../.."), "config/openapi.json"));
const validators = {
  listPets: answerValidator(api, "listPets", "200"),
  getPet: answerValidator(api, "getPet", "200"),
  createPet: answerValidator(api, "createPet", "201"),
};
const PET_PATH = /^\/v1\/pets\/[0-9]+$/;
const operationOf = (req: IncomingMessage) =>
  req.method === "POST" ? "createPet" : PET_PATH.test(req.url ?? "") ? "getPet" : "listPets";

// --must-do: a request's start and deadline, kept on its response.
const STARTED = Symbol("started");
const DEADLINE = Symbol("deadline");
type Timed = ServerResponse & { [STARTED]?: number; [DEADLINE]?: NodeJS.Timeout };
const GENERATED_ID_SIZED = "00000000-0000-4000-8000-000000000000";
const digests = new Map<string, Buffer>();
const presented = Buffer.alloc(32);
if (values["key-sha256"]) digests.set(values["key-sha256"], Buffer.from(values["key-sha256"], "hex"));
const limitDefault = api.operation("listPets")?.queryParameters.get("limit")?.schema.default;
const metrics = createMetrics({ defaultMetrics: false });
const access = mustDo ? accessLogToDevNull() : undefined;

function admit(req: IncomingMessage, res: ServerResponse): void {
  const authorization = req.headers.authorization ?? "";
  // As the auth policy does it: the digest as hex text, its bytes compared through one buffer.
  const digest = authorization.startsWith("Bearer ") ? hash("sha256", authorization.slice(7), "hex") : "";
  const known = digests.get(digest);
  if (known) presented.write(digest, "hex");
  if (!known || !timingSafeEqual(known, presented)) {
    res.writeHead(401, { "content-type": "application/json" });
    res.end('{"code":"UNAUTHENTICATED","message":"no known key","status":401}');
    return;
  }
  if (req.method === "GET" && req.url === "/v1/pets") req.url = `/v1/pets?limit=${limitDefault}`;
  (res as Timed)[STARTED] = performance.now();
  (res as Timed)[DEADLINE] = setTimeout(onDeadline, DEADLINE_MS, res);
  forward(req, res);
}

// The answer is held until it is whole and its timer cleared when it is sent, so a deadline always
// finds nothing sent yet; checkAndSend drops an answer that comes later.
function onDeadline(res: ServerResponse): void {
  res.writeHead(504, { "content-type": "application/json" });
  res.end('{"code":"UPSTREAM_TIMEOUT","message":"no answer in time","status":504}');
}

/** Stops the deadline, observes the duration and writes the access line. */
function observe(req: IncomingMessage, res: Timed, status: number): void {
  clearTimeout(res[DEADLINE]);
  const durationMs = performance.now() - (res[STARTED] ?? 0);
  const operation = operationOf(req);
  metrics.observeRequest(operation, req.method ?? "", statusLabel(status), durationMs / 1000);
  access?.info(
    {
      // The gateway's line always has one (a generated UUID when the client sent none).
      reqId: req.headers["x-request-id"] ?? GENERATED_ID_SIZED,
      operation,
      method: req.method,
      path: req.url,
      status,
      durationMs: Math.round(durationMs * 1000) / 1000,
      consumer: "bench",
    },
    "request",
  );
}

function checkAndSend(answer: Forwarded): void {
  const { req, res, chunks } = answer;
  // Answered already (the deadline's 504 under --must-do).
  if (res.headersSent) return;
  const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
  const validate = validators[operationOf(req)];
  let valid = false;
  try {
    valid = validate(JSON.parse(body.toString("utf8")));
  } catch {
    valid = false;
  }
  if (!valid) {
    res.writeHead(502, { "content-type": "application/json" });
    res.end('{"code":"UPSTREAM_INVALID_RESPONSE","message":"bad answer","status":502}');
  } else {
    res.writeHead(answer.status, endToEnd(answer.headers, body.length));
    res.end(body);
  }
  if (mustDo) observe(req, res, res.statusCode);
}

/** The backend's headers for the client: its framing and connection headers are the proxy's own. */
function endToEnd(
  headers: IncomingMessage["headers"],
  length: number | undefined,
): Record<string, string | string[] | number> {
  const copy: Record<string, string | string[] | number> = {};
  for (const name in headers) {
    if (name === "transfer-encoding" || name === "connection" || name === "keep-alive") continue;
    const value = headers[name];
    if (value !== undefined) copy[name] = value;
  }
  if (length !== undefined) copy["content-length"] = length;
  return copy;
}

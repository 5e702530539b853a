// The baseline: http-proxy-3 with nothing else, and the same upstream agent as the gateway
// (src/proxy.ts): keep-alive, maxSockets and maxFreeSockets 256, LIFO, 4 s idle timeout,
// changeOrigin. What the gateway costs is measured against this, in the same run.
//   node scripts/bench/bare-proxy.ts --target http://127.0.0.1:PORT [--check]
// With --check it is the least a proxy enforcing the response contract must do, and nothing
// else: it holds each answer until it is whole, JSON.parse and the operation's compiled ajv
// validator judge it (502 when it fails), then sends it in one piece. What that costs over the
// bare proxy bounds, measured, what any gateway enforcing the contract with http-proxy-3 can reach.
// Prints one JSON line {event:"listening", url} on stdout.
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createProxyServer } from "http-proxy-3";
import { loadApiDescription } from "../../src/openapi.ts";

const { values } = parseArgs({
  options: { target: { type: "string" }, check: { type: "boolean", default: false } },
});
if (!values.target) throw new Error("--target is required");

const agent = new http.Agent({
  keepAlive: true,
  maxSockets: 256,
  maxFreeSockets: 256,
  timeout: 4000,
  scheduling: "lifo",
});
const proxy = createProxyServer({
  target: values.target,
  agent,
  changeOrigin: true,
  xfwd: false,
  selfHandleResponse: values.check,
});
if (values.check) proxy.on("proxyRes", checkAndSend);
proxy.on("error", (_error, _req, res) => {
  // Not expected under the benchmark; answer so the load generator counts it as non-2xx.
  if (res instanceof http.ServerResponse && !res.headersSent) {
    res.writeHead(502, { "content-type": "application/json" });
    res.end('{"code":"UPSTREAM_UNAVAILABLE","message":"bad gateway","status":502}');
  } else res.destroy();
});

// The same server limits as the gateway's defaults, so connection handling costs the same.
const server = http.createServer(
  { keepAliveTimeout: 75_000, headersTimeout: 10_000, requestTimeout: 30_000, maxHeaderSize: 16_384 },
  (req, res) => proxy.web(req, res),
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
const validatorOf = (operationId: string, status: string) => {
  const validate = api.operation(operationId)?.responses.get(status)?.validate;
  if (!validate) throw new Error(`${operationId} ${status} has no schema`);
  return validate;
};
const validators = {
  listPets: validatorOf("listPets", "200"),
  getPet: validatorOf("getPet", "200"),
  createPet: validatorOf("createPet", "201"),
};
const PET_PATH = /^\/v1\/pets\/[0-9]+$/;

function checkAndSend(answer: IncomingMessage, req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  answer.on("data", (chunk: Buffer) => chunks.push(chunk));
  answer.on("end", () => {
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
    const validate =
      req.method === "POST"
        ? validators.createPet
        : PET_PATH.test(req.url ?? "")
          ? validators.getPet
          : validators.listPets;
    let valid = false;
    try {
      valid = validate(JSON.parse(body.toString("utf8")));
    } catch {
      valid = false;
    }
    if (!valid) {
      res.writeHead(502, { "content-type": "application/json" });
      res.end('{"code":"UPSTREAM_INVALID_RESPONSE","message":"bad answer","status":502}');
      return;
    }
    res.writeHead(answer.statusCode ?? 502, { ...answer.headers, "content-length": body.length });
    res.end(body);
  });
}

// The baseline: http-proxy-3 with nothing else, and the same upstream agent as the gateway
// (src/proxy.ts): keep-alive, maxSockets and maxFreeSockets 256, LIFO, 4 s idle timeout,
// changeOrigin. What the gateway costs is measured against this, in the same run.
//   node scripts/bench/bare-proxy.ts --target http://127.0.0.1:PORT
// Prints one JSON line {event:"listening", url} on stdout.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { createProxyServer } from "http-proxy-3";

const { values } = parseArgs({ options: { target: { type: "string" } } });
if (!values.target) throw new Error("--target is required");

const agent = new http.Agent({
  keepAlive: true,
  maxSockets: 256,
  maxFreeSockets: 256,
  timeout: 4000,
  scheduling: "lifo",
});
const proxy = createProxyServer({ target: values.target, agent, changeOrigin: true, xfwd: false });
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

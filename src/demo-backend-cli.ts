// Runs the demo Pet Store backend as its own process:
//   node src/demo-backend-cli.ts [--port N] [--host H] [--seed N]
// The single JSON line on stdout is the contract with whoever started us (tests,
// scripts): it carries the real port when --port 0 let the OS choose.

import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { createDemoBackend } from "./demo-backend.ts";

function fatal(message: string): never {
  process.stderr.write(`demo-backend: ${message}\n`);
  process.exit(1);
}

function integerArg(name: string, raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value <= max)) fatal(`--${name} must be an integer from 0 to ${max}, got ${JSON.stringify(raw)}`);
  return value;
}

function readArgs() {
  try {
    return parseArgs({
      options: { port: { type: "string" }, host: { type: "string" }, seed: { type: "string" } },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    return fatal((err as Error).message);
  }
}

const args = readArgs();
const port = integerArg("port", args.port, 0, 65535);
const seed = integerArg("seed", args.seed, 6, 1_000_000);
const host = args.host ?? "127.0.0.1";

const server = createDemoBackend({ seed });
server.on("error", (err) => fatal(err.message));
server.listen(port, host, () => {
  const address = server.address() as AddressInfo;
  const urlHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  process.stdout.write(
    `${JSON.stringify({ event: "listening", url: `http://${urlHost}:${address.port}/v1` })}\n`,
  );
});

function shutdown(): void {
  // Keep-alive connections would hold close() open; the demo has no work worth draining.
  server.close(() => process.exit(0));
  server.closeAllConnections();
}
process.once("SIGTERM", shutdown);
process.once("SIGINT", shutdown);

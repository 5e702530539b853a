// A gateway config file for a test that starts the program as its own process.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Bounds every wait of a connection: whatever it sent, it is answered or closed within a few seconds. */
const SERVER = {
  headersTimeoutMs: 1000,
  requestTimeoutMs: 2000,
  keepAliveTimeoutMs: 500,
  shutdownDrainMs: 100,
  shutdownTimeoutMs: 5000,
};

/** A config file with the ops port on loopback and every wait bounded, plus the given settings. */
export function boundedConfigFile(config: Record<string, unknown> = {}): string {
  const file = join(mkdtempSync(join(tmpdir(), "gw-ops-process-")), "gateway.json");
  writeFileSync(file, JSON.stringify({ opsHost: "127.0.0.1", server: SERVER, ...config }));
  return file;
}

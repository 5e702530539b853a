// A gateway config file for a test that starts the program (or a script reading its config) as
// its own process.
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

/** The ops port on loopback and every wait of a connection bounded, plus the given settings. */
export function boundedConfig(config: Record<string, unknown> = {}): Record<string, unknown> {
  return { opsHost: "127.0.0.1", server: SERVER, ...config };
}

/** A config file with the ops port on loopback and every wait bounded, plus the given settings. */
export function boundedConfigFile(config: Record<string, unknown> = {}): string {
  return configFileWith(boundedConfig(config));
}

/**
 * A config file holding `base` with each of `more` merged over it in turn (objects member by
 * member, anything else replaced); returns its path.
 */
export function configFileWith(
  base: Record<string, unknown>,
  ...more: readonly Record<string, unknown>[]
): string {
  const file = join(mkdtempSync(join(tmpdir(), "gw-config-")), "gateway.json");
  writeFileSync(file, JSON.stringify(more.reduce(mergeSettings, base)));
  return file;
}

function mergeSettings(
  base: Record<string, unknown>,
  over: Record<string, unknown>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  for (const [name, value] of Object.entries(over)) {
    const under = merged[name];
    merged[name] = isObject(under) && isObject(value) ? mergeSettings(under, value) : value;
  }
  return merged;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

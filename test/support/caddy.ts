// Debian's Caddy as a test's own child process: `caddy run` in the foreground with the generated
// Caddyfile, the admin API off (it would take :2019), its data and config directories in the
// test's own prefix (no autosave, no certificates), on a port the test chose. A machine without
// Caddy gets a reason to skip.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ProxyProcess, startProxyProcess } from "./proxy-process.ts";

const CADDY = process.env.CADDY_BINARY ?? (existsSync("/usr/bin/caddy") ? "/usr/bin/caddy" : "caddy");

/** Why the Caddy cells must skip here (no caddy), or undefined. */
export function caddySkipReason(): string | undefined {
  const run = spawnSync(CADDY, ["version"], { encoding: "utf8" });
  if (run.error !== undefined || run.status !== 0) {
    return `caddy is not installed (apt-get install caddy, as CONTRIBUTING.md lists): ${run.error?.message ?? run.stderr}`;
  }
  return undefined;
}

/** Runs Caddy with a generated Caddyfile listening on `port`; the test's own settings go first. */
export async function startCaddy(caddyfile: string, port: number): Promise<ProxyProcess> {
  const prefix = mkdtempSync(join(tmpdir(), "gw-caddy-"));
  const file = join(prefix, "Caddyfile");
  // Global options: no admin endpoint, no state written outside the prefix, no HTTPS.
  writeFileSync(
    file,
    `{\n\tadmin off\n\tauto_https off\n\tstorage file_system ${join(prefix, "data")}\n}\n${caddyfile}`,
  );
  return startProxyProcess({
    name: "caddy",
    command: CADDY,
    args: ["run", "--config", file, "--adapter", "caddyfile"],
    port,
    prefix,
    stopSignal: "SIGTERM",
    env: { HOME: prefix, XDG_DATA_HOME: join(prefix, "data"), XDG_CONFIG_HOME: join(prefix, "config") },
  });
}

// Debian's HAProxy as a test's own child process: `haproxy -db` in the foreground (no daemon, no
// system service) with the generated config and the Lua action of deploy/haproxy/, in the test's
// own prefix directory, on a port the test chose. A machine without HAProxy, or with one built
// without Lua or older than 2.5 (no core.httpclient), gets a reason to skip.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ProxyProcess, startProxyProcess } from "./proxy-process.ts";

const HAPROXY =
  process.env.HAPROXY_BINARY ?? (existsSync("/usr/sbin/haproxy") ? "/usr/sbin/haproxy" : "haproxy");

/** The Lua action the generated config loads, as the repository ships it. */
export const HAPROXY_LUA = join(import.meta.dirname, "../../deploy/haproxy/gateway-decide.lua");

/** Why the HAProxy cells must skip here, or undefined. */
export function haproxySkipReason(): string | undefined {
  const run = spawnSync(HAPROXY, ["-vv"], { encoding: "utf8" });
  if (run.error !== undefined || !run.stdout.includes("HAProxy version")) {
    return `haproxy is not installed (apt-get install haproxy, as CONTRIBUTING.md lists): ${run.error?.message ?? run.stderr}`;
  }
  if (!run.stdout.includes("Built with Lua version"))
    return "this haproxy was built without Lua (haproxy -vv)";
  const version = /HAProxy version (\d+)\.(\d+)/.exec(run.stdout);
  if (version && Number(version[1]) * 100 + Number(version[2]) < 205) {
    return "this haproxy is older than 2.5: its Lua has no core.httpclient";
  }
  return undefined;
}

/** Runs HAProxy with a generated config listening on `port`. */
export async function startHaproxy(config: string, port: number): Promise<ProxyProcess> {
  const prefix = mkdtempSync(join(tmpdir(), "gw-haproxy-"));
  const file = join(prefix, "haproxy.cfg");
  writeFileSync(file, config);
  return startProxyProcess({
    name: "haproxy",
    command: HAPROXY,
    args: ["-db", "-f", file],
    port,
    prefix,
    stopSignal: "SIGTERM",
  });
}

// Debian's nginx as a test's own child process: its own prefix and temporary directories, no
// daemon, no master process, its error log in a temporary file, on a port the OS chose. A machine
// without nginx, or with one built without the auth_request module, gets a reason to skip.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "./eventually.ts";
import { request } from "./http.ts";

// Debian installs it in /usr/sbin, which a user's PATH may lack.
const NGINX = process.env.NGINX_BINARY ?? (existsSync("/usr/sbin/nginx") ? "/usr/sbin/nginx" : "nginx");

/** Why the nginx matrix must skip here (no nginx, or no auth_request module), or undefined. */
export function nginxSkipReason(): string | undefined {
  // nginx -V writes to stderr.
  const run = spawnSync(NGINX, ["-V"], { encoding: "utf8" });
  if (run.error !== undefined || !run.stderr.includes("nginx version")) {
    return `nginx is not installed (apt-get install nginx, as CONTRIBUTING.md lists): ${run.error?.message ?? run.stderr}`;
  }
  if (!run.stderr.includes("--with-http_auth_request_module")) {
    return "this nginx was built without the auth_request module (nginx -V)";
  }
  return undefined;
}

/** A port nobody listens on right now (listen on 0, close). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

export interface NginxProcess {
  readonly origin: string;
  readonly port: number;
  errorLog(): string;
  stop(): Promise<void>;
}

/**
 * Runs nginx with a generated config (listening on `port`): the test's own settings (temp paths,
 * logs) go into its http block; pid, daemon and master_process are set on the command line.
 */
export async function startNginx(config: string, port: number): Promise<NginxProcess> {
  const prefix = mkdtempSync(join(tmpdir(), "gw-nginx-"));
  for (const dir of ["logs", "temp/body", "temp/proxy", "temp/fastcgi", "temp/uwsgi", "temp/scgi"]) {
    mkdirSync(join(prefix, dir), { recursive: true });
  }
  const errorLog = join(prefix, "logs", "error.log");
  const own = [
    `  client_body_temp_path ${join(prefix, "temp/body")};`,
    `  proxy_temp_path ${join(prefix, "temp/proxy")};`,
    `  fastcgi_temp_path ${join(prefix, "temp/fastcgi")};`,
    `  uwsgi_temp_path ${join(prefix, "temp/uwsgi")};`,
    `  scgi_temp_path ${join(prefix, "temp/scgi")};`,
    "  access_log off;",
  ].join("\n");
  const file = join(prefix, "nginx.conf");
  writeFileSync(file, config.replace(/^http \{$/m, `http {\n${own}`));
  const globals = `daemon off; master_process off; pid ${join(prefix, "nginx.pid")}; error_log ${errorLog} info;`;
  const child: ChildProcess = spawn(NGINX, ["-p", prefix, "-c", file, "-e", errorLog, "-g", globals], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const origin = `http://127.0.0.1:${port}`;
  const exited = once(child, "exit");
  try {
    await Promise.race([
      eventually(`nginx listening on ${port}`, () => request(`${origin}/`).then(() => true), 10_000),
      exited.then(([code]) => {
        throw new Error(`nginx exited with ${code}: ${stderr}${readLog(errorLog)}`);
      }),
    ]);
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return {
    origin,
    port,
    errorLog: () => readLog(errorLog),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGQUIT");
        await Promise.race([exited, new Promise((done) => setTimeout(done, 3000).unref())]);
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      }
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}

function readLog(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

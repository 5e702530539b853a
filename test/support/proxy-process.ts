// A proxy (nginx, Caddy, HAProxy) as a test's own child process: its own prefix directory, in the
// foreground, no system service, on a port the test chose; started when it answers on that port,
// stopped by its own pid, its prefix removed.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync, rmSync } from "node:fs";
import { eventually } from "./eventually.ts";
import { request } from "./http.ts";

export interface ProxyProcess {
  readonly origin: string;
  readonly port: number;
  /** What the proxy wrote to its error log file and its stderr. */
  errorLog(): string;
  stop(): Promise<void>;
}

export interface ProxyLaunch {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly port: number;
  /** The directory that is the proxy's own, removed on stop. */
  readonly prefix: string;
  readonly errorLogFile?: string;
  /** The signal that stops it gracefully (nginx: SIGQUIT; Caddy, HAProxy: SIGTERM/SIGUSR1). */
  readonly stopSignal: NodeJS.Signals;
  /** Added to the environment (Caddy's HOME and XDG directories, inside the prefix). */
  readonly env?: Readonly<Record<string, string>>;
}

export async function startProxyProcess(launch: ProxyLaunch): Promise<ProxyProcess> {
  const child: ChildProcess = spawn(launch.command, [...launch.args], {
    stdio: ["ignore", "ignore", "pipe"],
    cwd: launch.prefix,
    env: { ...process.env, ...launch.env },
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    // Bounded: the tail is what explains a failure.
    stderr = (stderr + chunk.toString()).slice(-64_000);
  });
  const errorLog = () => `${stderr}${launch.errorLogFile ? readLog(launch.errorLogFile) : ""}`;
  const origin = `http://127.0.0.1:${launch.port}`;
  const exited = once(child, "exit");
  try {
    await Promise.race([
      eventually(
        `${launch.name} listening on ${launch.port}`,
        () => request(`${origin}/`).then(() => true),
        10_000,
      ),
      exited.then(([code]) => {
        throw new Error(`${launch.name} exited with ${code}: ${errorLog()}`);
      }),
    ]);
  } catch (error) {
    child.kill("SIGKILL");
    rmSync(launch.prefix, { recursive: true, force: true });
    throw error;
  }
  return {
    origin,
    port: launch.port,
    errorLog,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(launch.stopSignal);
        await Promise.race([exited, new Promise((done) => setTimeout(done, 3000).unref())]);
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      }
      rmSync(launch.prefix, { recursive: true, force: true });
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

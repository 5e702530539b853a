// Processes: every child is tracked and killed when the benchmark ends, however it ends.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { ROOT } from "./context.ts";

const children = new Set<ChildProcess>();
const stopping = new Set<ChildProcess>();
let shuttingDown = false;

/**
 * Kills every tracked child when the process exits, however it exits, and gives the run a
 * scratch directory removed at exit. Called once, by main().
 */
export function setUpProcesses(): { work: string } {
  process.on("exit", () => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  process.on("SIGINT", () => process.exit(130));
  process.on("SIGTERM", () => process.exit(143));
  const work = mkdtempSync(join(os.tmpdir(), "petstore-bench-"));
  process.on("exit", () => rmSync(work, { recursive: true, force: true }));
  return { work };
}

/** From here on a child's exit is expected: the benchmark is ending. */
export function shutDown(): void {
  shuttingDown = true;
}

/** A child that must not exit before it is stopped: an early exit ends the benchmark with its stderr. */
export function track(child: ChildProcess, label: string): ChildProcess {
  children.add(child);
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  child.once("exit", (code, signal) => {
    children.delete(child);
    if (!stopping.has(child) && !shuttingDown) {
      process.stderr.write(`bench: ${label} exited early (${signal ?? code})\n${stderr}\n`);
      process.exit(1);
    }
  });
  return child;
}

/** A child whose exit is expected (a load generator's run). */
export function expectExit(child: ChildProcess): void {
  stopping.add(child);
}

export async function stop(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  stopping.add(child);
  const exited = once(child, "exit");
  child.kill(signal);
  await exited;
}

/** A node child that prints {event:"listening", url} as its first stdout line. */
export async function startNode(
  label: string,
  args: string[],
  nodeFlags: string[] = [],
): Promise<{ child: ChildProcess; url: string }> {
  const child = track(
    spawn(process.execPath, [...nodeFlags, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] }),
    label,
  );
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const [line] = (await once(lines, "line")) as [string];
  lines.close();
  child.stdout?.resume();
  return { child, url: (JSON.parse(line) as { url: string }).url };
}

export async function freePort(): Promise<number> {
  const server = http.createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  server.close();
  return port;
}

export async function waitFor(url: string, status = 200, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.status === status) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer ${status} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

let clockTicks: number | undefined;
const ticksPerSecond = (): number =>
  (clockTicks ??= (() => {
    try {
      return Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
    } catch {
      return 100;
    }
  })());

/** User + system CPU of a process in milliseconds (Linux /proc), or undefined elsewhere. */
export function cpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond();
  } catch {
    return undefined;
  }
}

export function rssBytes(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export function openFiles(pid: number): number | undefined {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return undefined;
  }
}

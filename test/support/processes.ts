// The programs an end-to-end test runs as processes of their own: the demo backend and the
// gateway (or a fixture that logs as it does), each on ports the OS chose.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { accessSync, constants } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { childEnv, GATEWAY_PROGRAM, PROJECT_ROOT } from "./program.ts";

export interface BackendProcess {
  readonly url: string;
  readonly child: ChildProcess;
  close(): Promise<void>;
}

/** The bundled demo backend as its own process, on a port the OS chose. */
export async function startDemoBackendProcess(args: readonly string[] = []): Promise<BackendProcess> {
  const child = spawn(process.execPath, ["src/demo-backend-cli.ts", "--port", "0", ...args], {
    cwd: PROJECT_ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const [line] = (await Promise.race([
    once(lines, "line"),
    once(child, "exit").then(([code]) => {
      throw new Error(`demo backend exited with ${code}`);
    }),
  ])) as [string];
  const { url } = JSON.parse(line) as { url: string };
  return {
    url,
    child,
    async close() {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      await once(child, "exit");
    },
  };
}

export interface GatewayProcess {
  readonly child: ChildProcess;
  /** http://127.0.0.1:PORT */
  readonly origin: string;
  readonly port: number;
  readonly opsUrl: string;
  /** The generated demo key, when the program runs the demo. */
  readonly demoKey: string | undefined;
  /** Every JSON line written to stdout so far. */
  readonly lines: Record<string, unknown>[];
  /** Every stdout line as written, JSON or not. */
  readonly raw: string[];
  /** Every stdout line that was not JSON (the program logs JSON only: expected empty). */
  readonly notJson: string[];
  stderr(): string;
  /** The first line, written or still to come, that matches. */
  waitFor(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** Sends the signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Resolves with the exit code when the process exits. */
  readonly exited: Promise<number | null>;
  /** When it exited (performance.now()), for tests that time a shutdown. */
  readonly exitedAt: Promise<number>;
}

/**
 * The gateway program as `npm start` runs it (or another program that logs as it does, e.g. a
 * fixture with a planted bug), in its own process, on ports the OS chose; resolves once it listens.
 */
export async function startGatewayProcess(
  env: Record<string, string> = {},
  program: readonly string[] = GATEWAY_PROGRAM,
): Promise<GatewayProcess> {
  const child = spawn(process.execPath, program, {
    cwd: PROJECT_ROOT,
    env: { ...childEnv(), PORT: "0", OPS_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const notJson: string[] = [];
  const waiters = new Set<{
    match: (line: Record<string, unknown>) => boolean;
    found: (line: Record<string, unknown>) => void;
  }>();
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (text: string) => {
    raw.push(text);
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text) as Record<string, unknown>;
    } catch {
      notJson.push(text);
      return;
    }
    lines.push(line);
    for (const waiter of waiters) if (waiter.match(line)) waiter.found(line);
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = once(child, "exit");
  const exitedAt = exited.then(() => performance.now());
  const waitFor = (match: (line: Record<string, unknown>) => boolean, timeoutMs = 20_000) =>
    new Promise<Record<string, unknown>>((resolveLine, rejectLine) => {
      const seen = lines.find(match);
      if (seen) return resolveLine(seen);
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        rejectLine(new Error(`no such line within ${timeoutMs} ms; stderr: ${stderr}`));
      }, timeoutMs);
      const waiter = {
        match,
        found: (line: Record<string, unknown>) => {
          clearTimeout(timer);
          waiters.delete(waiter);
          resolveLine(line);
        },
      };
      waiters.add(waiter);
    });
  let listening: Record<string, unknown>;
  try {
    listening = await Promise.race([
      waitFor((line) => line.msg === "gateway listening"),
      exited.then(([code]) => {
        throw new Error(`the gateway exited with ${code}: ${stderr}`);
      }),
    ]);
  } catch (error) {
    // A gateway that never said it listens must not outlive the test (it would hold the run open).
    child.kill("SIGKILL");
    throw error;
  }
  // The demo's how-to-call line (with the key) goes to stderr.
  for (
    let waited = 0;
    listening.environment === "demo" && !stderr.includes("\n") && waited < 5000;
    waited += 20
  ) {
    await new Promise((done) => setTimeout(done, 20));
  }
  return {
    child,
    origin: `http://127.0.0.1:${listening.port}`,
    port: listening.port as number,
    opsUrl: `http://127.0.0.1:${listening.opsPort}`,
    get demoKey() {
      return /Bearer (\S+)'/.exec(stderr)?.[1];
    },
    lines,
    raw,
    notJson,
    stderr: () => stderr,
    waitFor,
    exited: exited.then(([code]) => code as number | null),
    exitedAt,
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const [code] = await exited;
      return code as number | null;
    },
  };
}

/** The `fatal error` lines a process wrote: a bug reached the top of the program. */
export const fatalLines = (gw: GatewayProcess) => gw.lines.filter((line) => line.msg === "fatal error");

/** The path of a program on PATH (promtool, wrk, ...), or undefined: a test that needs it skips, saying so. */
export function findProgram(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}

/** What a program run to its end left: its exit code and both outputs. */
export interface ProgramRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * A program of the project (a CLI, the gateway refusing to start) run to its end in its own
 * process: Node with `args` unless another program is named, a clean environment plus `env`, and
 * `stdin` written then closed (nothing otherwise), killed after `timeoutMs` (30 s).
 */
export async function runProgram(
  args: readonly string[],
  options: {
    readonly program?: string;
    /** The directory it runs in: the project's root unless a test plays a user elsewhere. */
    readonly cwd?: string;
    readonly env?: Record<string, string>;
    readonly stdin?: string;
    /** Past this the program is killed and the run fails: a program that should end never hangs a test. */
    readonly timeoutMs?: number;
  } = {},
): Promise<ProgramRun> {
  const child = spawn(options.program ?? process.execPath, args, {
    cwd: options.cwd ?? PROJECT_ROOT,
    env: { ...childEnv(), ...options.env },
    stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  // A program that ends before reading all of its input must fail an assertion, not the file (EPIPE).
  child.stdin?.on("error", () => {});
  if (options.stdin !== undefined) child.stdin?.end(options.stdin);
  const timeoutMs = options.timeoutMs ?? 30_000;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, timeoutMs);
  const [code] = (await once(child, "close")) as [number | null];
  clearTimeout(timer);
  if (timedOut) throw new Error(`${args.join(" ")} did not end within ${timeoutMs} ms; stderr: ${stderr}`);
  return { code, stdout, stderr };
}

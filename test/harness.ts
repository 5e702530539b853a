// What every end-to-end test needs: a real demo backend process, a real gateway listening on
// port 0, an HTTP client that shows exactly what came back, the gateway's pino lines as JSON,
// and /metrics parsed as Prometheus text.
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import {
  accessSync,
  constants,
  existsSync,
  mkdtempSync,
  readdirSync,
  statSync,
  writeFileSync,
} from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import policies from "../policies/index.ts";
import { buildForStart, GATEWAY_ENTRY, GATEWAY_NODE_FLAGS } from "../scripts/start-command.ts";
import { type GatewayConfig, validateConfig } from "../src/config.ts";
import { buildGateway, type Gateway } from "../src/gateway.ts";
import { createLogger } from "../src/logger.ts";
import type { AnyPolicyDefinition } from "../src/policy.ts";

export const PROJECT_ROOT = resolve(import.meta.dirname, "..");
/** Node's arguments for the gateway program as `npm start` runs it: its flags, then the build's entry. */
export const GATEWAY_PROGRAM: readonly string[] = [...GATEWAY_NODE_FLAGS, GATEWAY_ENTRY];

// `npm test` builds first. A test file run alone after an edit builds here, so that it never
// starts an older program than the sources it reads.
{
  const entry = join(PROJECT_ROOT, GATEWAY_ENTRY);
  const builtAt = existsSync(entry) ? statSync(entry).mtimeMs : 0;
  const newestSource = ["src", "policies"]
    .flatMap((dir) =>
      readdirSync(join(PROJECT_ROOT, dir), { recursive: true, encoding: "utf8" })
        .filter((file) => file.endsWith(".ts"))
        .map((file) => statSync(join(PROJECT_ROOT, dir, file)).mtimeMs),
    )
    .reduce((a, b) => Math.max(a, b), 0);
  if (newestSource > builtAt) buildForStart(PROJECT_ROOT);
}

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

export interface ApiKey {
  readonly consumer: string;
  readonly key: string;
}

export interface KeysFile {
  readonly file: string;
  /** The clear keys, in the order of the consumers given. */
  readonly keys: ApiKey[];
  /** The first consumer's clear key: most suites call as one consumer. */
  readonly key: string;
  /** The clear key of a consumer of this file (throws for any other name). */
  keyOf(consumer: string): string;
}

/** Writes a key file holding digests only; returns its path and the clear keys for the test to use. */
export function writeKeysFile(consumers: readonly string[], directory?: string): KeysFile {
  const dir = directory ?? mkdtempSync(join(tmpdir(), "gw-keys-"));
  const keys = consumers.map((consumer) => ({
    consumer,
    key: `test_${randomBytes(24).toString("base64url")}`,
  }));
  const file = join(dir, "api-keys.json");
  writeKeysFileAt(file, keys);
  const keyOf = (consumer: string) => {
    const found = keys.find((k) => k.consumer === consumer);
    if (!found) throw new Error(`no key for ${consumer} in ${file}`);
    return found.key;
  };
  return { file, keys, key: keyOf(consumers[0] as string), keyOf };
}

export function writeKeysFileAt(file: string, keys: readonly ApiKey[]): void {
  const entries = keys.map(({ consumer, key }) => ({ consumer, sha256: sha256(key) }));
  writeFileSync(file, `${JSON.stringify({ keys: entries })}\n`);
}

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** The gateway's pino lines, parsed, as they were written. */
export class LogCapture extends Writable {
  readonly lines: Record<string, unknown>[] = [];
  readonly raw: string[] = [];
  #partial = "";
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    const text = this.#partial + chunk.toString("utf8");
    const parts = text.split("\n");
    this.#partial = parts.pop() ?? "";
    for (const part of parts) {
      if (part === "") continue;
      this.raw.push(part);
      this.lines.push(JSON.parse(part) as Record<string, unknown>);
    }
    done();
  }
  /** Lines with the given msg. */
  messages(msg: string): Record<string, unknown>[] {
    return this.lines.filter((line) => line.msg === msg);
  }
}

export interface TestGateway {
  readonly url: string; // e.g. http://127.0.0.1:PORT/v1
  readonly origin: string; // http://127.0.0.1:PORT
  readonly opsUrl: string; // http://127.0.0.1:OPSPORT
  readonly gateway: Gateway;
  readonly config: GatewayConfig;
  readonly logs: LogCapture;
  close(): Promise<void>;
}

export interface StartGatewayOptions {
  readonly upstreamUrl: string;
  /** Partial config, validated like a config file. */
  readonly config?: Record<string, unknown>;
  readonly policies?: readonly AnyPolicyDefinition[];
  readonly environment?: string;
  readonly now?: () => number;
}

export async function startGateway(options: StartGatewayOptions): Promise<TestGateway> {
  const config = validateConfig({ port: 0, opsPort: 0, ...options.config }, options.policies ?? policies);
  const logs = new LogCapture();
  // The gateway's own logger configuration (redaction included), writing into the capture.
  const { logger } = createLogger(config.log.level, logs);
  const built = buildGateway({
    config,
    policies: options.policies ?? policies,
    upstreamUrl: options.upstreamUrl,
    environment: options.environment ?? "production",
    logger,
    ...(options.now ? { now: options.now } : {}),
  });
  built.server.listen(0, "127.0.0.1");
  built.opsServer.listen(0, "127.0.0.1");
  await Promise.all([once(built.server, "listening"), once(built.opsServer, "listening")]);
  const port = (built.server.address() as AddressInfo).port;
  const opsPort = (built.opsServer.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    url: `${origin}${built.gateway.api.basePath}`,
    origin,
    opsUrl: `http://127.0.0.1:${opsPort}`,
    gateway: built.gateway,
    config,
    logs,
    async close() {
      built.server.closeAllConnections();
      built.opsServer.closeAllConnections();
      await Promise.all([
        new Promise((done) => built.server.close(done)),
        new Promise((done) => built.opsServer.close(done)),
      ]);
      await built.gateway.close();
    },
  };
}

export interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  json<T = unknown>(): T;
}

export interface RequestOptions {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
  /** A bearer key: sets Authorization: Bearer <key>. */
  readonly key?: string;
}

/** One HTTP/1.1 request on its own connection; the body is returned whole, as text. */
export function request(url: string, options: RequestOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined && headers["content-type"] === undefined)
    headers["content-type"] = "application/json";
  return new Promise((resolveAnswer, rejectAnswer) => {
    const req = http.request(url, { method: options.method ?? "GET", headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", rejectAnswer);
      res.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        resolveAnswer({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body,
          json: <T>() => JSON.parse(body) as T,
        });
      });
    });
    req.on("error", rejectAnswer);
    req.end(options.body);
  });
}

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parses the Prometheus text exposition format (what prom-client writes) into samples. */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/.exec(line);
    if (!match) throw new Error(`not Prometheus text: ${line}`);
    const labels: Record<string, string> = {};
    const labelText = match[2] ?? "";
    for (const label of labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[label[1] as string] = (label[2] as string).replace(/\\(.)/g, (_, c: string) =>
        c === "n" ? "\n" : c,
      );
    }
    const raw = match[3] as string;
    samples.push({
      name: match[1] as string,
      labels,
      value:
        raw === "+Inf" ? Number.POSITIVE_INFINITY : raw === "-Inf" ? Number.NEGATIVE_INFINITY : Number(raw),
    });
  }
  return samples;
}

/** Scrapes /metrics of a test gateway. */
export async function scrape(gateway: { readonly opsUrl: string }): Promise<Sample[]> {
  const answer = await request(`${gateway.opsUrl}/metrics`);
  if (answer.status !== 200) throw new Error(`/metrics answered ${answer.status}`);
  return parsePrometheus(answer.body);
}

/** The value of the one sample with this name and these labels (0 when absent). */
export function sampleValue(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  const found = samples.filter(
    (sample) =>
      sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  return found.reduce((sum, sample) => sum + sample.value, 0);
}

/**
 * Polls `probe` until it answers, for what the gateway does after the answer a test awaited (a
 * log line, a counter, a key file reloaded). A probe answers with any value but `undefined` or
 * `false`, and that value is returned; one that throws (an assertion not yet true) is polled
 * again. Past the deadline it fails naming what was awaited, with the last error the probe threw
 * (message and cause).
 */
export async function eventually<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 5000,
): Promise<Exclude<T, undefined | false>> {
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value as Exclude<T, undefined | false>;
    } catch (error) {
      lastError = error;
    }
    if (performance.now() > deadline) {
      if (lastError === undefined) throw new Error(`not within ${timeoutMs} ms: ${what}`);
      const last = lastError instanceof Error ? lastError.message : String(lastError);
      throw new Error(`not within ${timeoutMs} ms: ${what}; the last try failed with: ${last}`, {
        cause: lastError,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
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
    env: { PATH: process.env.PATH ?? "", PORT: "0", OPS_PORT: "0", ...env },
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

// What the hardening tests share: raw-socket exchanges (for what an HTTP client refuses to send),
// a backend that answers inside the contract, the set of statuses the README lists, a watch for
// crashes of the test process itself, and the check that no key ever shows up where it must not.
import assert from "node:assert/strict";
import net from "node:net";
import { errorCatalogue } from "../src/errors.ts";
import type { Behaviour, RecordedRequest } from "./fixtures/programmable-backend.ts";
import { type ApiKey, sha256 } from "./harness.ts";

/** Every status the README names: the error catalogue and the interface's own answers. */
export const DOCUMENTED_STATUSES: ReadonlySet<number> = new Set([
  200,
  201,
  204, // a CORS preflight
  ...Object.values(errorCatalogue).map((entry) => entry.status),
]);

export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface RawOutcome {
  readonly text: string;
  readonly responses: RawResponse[];
  /** True when the gateway closed the connection (FIN or reset) before the wait ran out. */
  readonly closed: boolean;
}

/**
 * Writes bytes on a fresh connection (each string of `parts` as its own write, `gapMs` apart) and
 * collects everything that comes back until the gateway closes the connection or `waitMs` pass.
 */
export function rawExchange(
  port: number,
  parts: string | readonly string[],
  options: { readonly waitMs?: number; readonly gapMs?: number } = {},
): Promise<RawOutcome> {
  const chunks = typeof parts === "string" ? [parts] : parts;
  const waitMs = options.waitMs ?? 2000;
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let text = "";
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, responses: parseResponses(text), closed });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.setEncoding("latin1");
    socket.on("data", (data: string) => {
      text += data;
    });
    socket.on("error", () => finish(true));
    socket.on("end", () => finish(true));
    socket.on("close", () => finish(true));
    socket.on("connect", async () => {
      for (let i = 0; i < chunks.length; i++) {
        if (i > 0 && options.gapMs) await new Promise((wake) => setTimeout(wake, options.gapMs));
        if (socket.destroyed) return;
        socket.write(chunks[i] as string, "latin1");
      }
    });
  });
}

/** Splits a byte stream of HTTP/1.1 responses (Content-Length or chunked) into responses. */
export function parseResponses(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  while (rest.length > 0) {
    const end = rest.indexOf("\r\n\r\n");
    if (end === -1) break;
    const [statusLine, ...lines] = rest.slice(0, end).split("\r\n");
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? "")?.[1] ?? Number.NaN);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    rest = rest.slice(end + 4);
    let body = "";
    if (headers["content-length"] !== undefined) {
      const length = Number(headers["content-length"]);
      body = rest.slice(0, length);
      rest = rest.slice(length);
    } else if (headers["transfer-encoding"] === "chunked") {
      for (;;) {
        const lineEnd = rest.indexOf("\r\n");
        if (lineEnd === -1) break;
        const size = Number.parseInt(rest.slice(0, lineEnd), 16);
        rest = rest.slice(lineEnd + 2);
        if (!(size > 0)) {
          rest = rest.slice(rest.indexOf("\r\n") + 2);
          break;
        }
        body += rest.slice(0, size);
        rest = rest.slice(size + 2);
      }
    } else if (!(status === 204 || status === 304 || status < 200)) {
      body = rest;
      rest = "";
    }
    responses.push({ status, headers, body: Buffer.from(body, "latin1").toString("utf8") });
  }
  return responses;
}

const PET = { id: 1, name: "Rex", categoryId: 7, status: "available" };

/** A backend that answers every operation inside the contract, so only injected faults fail. */
export function contractAnswer(req: RecordedRequest): Behaviour {
  const json = (status: number, body: string): Behaviour => ({
    kind: "respond",
    status,
    headers: { "content-type": "application/json" },
    body,
  });
  const path = req.url.split("?")[0] ?? "";
  // The created animal is what was sent plus an id, spliced as text so int64 stays exact.
  if (req.method === "POST") return json(201, `{"id":1,${req.body.toString("utf8").trim().slice(1)}`);
  const id = /^\/v1\/pets\/(\d+)$/.exec(path)?.[1];
  if (id !== undefined) return json(200, JSON.stringify({ ...PET, id: 0 }).replace('"id":0', `"id":${id}`));
  return json(200, JSON.stringify([PET]));
}

/**
 * Watches the test process itself: any uncaught exception or unhandled rejection while the
 * gateway runs in-process is a crash the gateway would have had. `uncaughtExceptionMonitor`
 * only observes, so node:test still reports the error where it happened.
 */
export function watchForCrashes(): { readonly crashes: string[]; stop(): void } {
  const crashes: string[] = [];
  const onException = (error: Error) => crashes.push(`uncaughtException: ${error.stack ?? error}`);
  const onRejection = (reason: unknown) =>
    crashes.push(`unhandledRejection: ${(reason as Error)?.stack ?? String(reason)}`);
  process.on("uncaughtExceptionMonitor", onException);
  process.on("unhandledRejection", onRejection);
  return {
    crashes,
    stop() {
      process.off("uncaughtExceptionMonitor", onException);
      process.off("unhandledRejection", onRejection);
    },
  };
}

/**
 * Asserts that no key, and no full SHA-256 digest of one, appears in any of the texts (log
 * lines, error bodies, /metrics). A digest is what the key file holds: it must not leak either.
 */
export function assertNoSecrets(keys: readonly ApiKey[], texts: Iterable<string>, where: string): number {
  const secrets = keys.flatMap(({ key }) => [key, sha256(key)]);
  let checked = 0;
  for (const text of texts) {
    checked++;
    for (const secret of secrets) {
      assert.ok(!text.includes(secret), `${where} holds a key or its digest: ${text.slice(0, 300)}`);
    }
  }
  return checked;
}

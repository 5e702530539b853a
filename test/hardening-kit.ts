// What the hardening tests share: raw-socket exchanges (for what an HTTP client refuses to send),
// a backend that answers inside the contract, the set of statuses the README lists, a watch for
// crashes of the test process itself, and the check that no key ever shows up where it must not.
import assert from "node:assert/strict";
import net from "node:net";
import { errorCatalogue } from "../src/index.ts";
import { type Behaviour, jsonAnswer, type RecordedRequest } from "./fixtures/programmable-backend.ts";
import { type ApiKey, request, sha256, type TestGateway } from "./harness.ts";

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
  const path = req.url.split("?")[0] ?? "";
  // The created animal is what was sent plus an id, spliced as text so int64 stays exact.
  if (req.method === "POST") return jsonAnswer(201, `{"id":1,${req.body.toString("utf8").trim().slice(1)}`);
  const id = /^\/v1\/pets\/(-?\d+)$/.exec(path)?.[1];
  if (id !== undefined)
    return jsonAnswer(200, JSON.stringify({ ...PET, id: 0 }).replace('"id":0', `"id":${id}`));
  // One animal, with the status the caller filtered on (the contract holds the backend to it).
  const status = new URL(req.url, "http://backend").searchParams.get("status");
  return jsonAnswer(200, JSON.stringify([{ ...PET, status: status ?? PET.status }]));
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

/** A test gateway's log lines, its /metrics and the answers a test kept: where a key must never be. */
export async function capturedOutputs(gw: TestGateway, answers: Iterable<string> = []): Promise<string[]> {
  const metrics = await request(`${gw.opsUrl}/metrics`);
  return [...gw.logs.raw, ...answers, metrics.body];
}

/** A valid request to pipeline behind a probe: if it reached the backend, the probe got through. */
export function pipelinedRequest(key: string): string {
  return `GET /v1/pets HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n\r\n`;
}

/**
 * Requests whose framing a parser and a backend could read differently (request smuggling), each
 * a valid createPet call apart from its flaw, so that one let through would reach the backend.
 */
export function framingProbes(key: string): Readonly<Record<string, string>> {
  const AUTH = `Authorization: Bearer ${key}\r\n`;
  const BODY = '{"name":"Rex","categoryId":7}';
  const JSON_BODY = `Content-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`;
  const post = (version: string, headers: string, body: string) =>
    `POST /v1/pets HTTP/${version}\r\nHost: gw\r\n${AUTH}Content-Type: application/json\r\n${headers}\r\n${body}`;
  const chunked = `${BODY.length.toString(16)}\r\n${BODY}\r\n0\r\n\r\n`;

  // The list first, then what else a parser and a backend could read differently.
  return {
    "Content-Length with Transfer-Encoding": post(
      "1.1",
      `Content-Length: ${BODY.length}\r\nTransfer-Encoding: chunked\r\n`,
      chunked,
    ),
    "two Content-Lengths": post("1.1", `Content-Length: ${BODY.length}\r\nContent-Length: 3\r\n`, BODY),
    "two equal Content-Lengths": post(
      "1.1",
      `Content-Length: ${BODY.length}\r\nContent-Length: ${BODY.length}\r\n`,
      BODY,
    ),
    "Content-Length: 0, 30": post("1.1", "Content-Length: 0, 30\r\n", BODY),
    "an obs-fold header line": post(
      "1.1",
      `X-Note: a\r\n  folded\r\nContent-Length: ${BODY.length}\r\n`,
      BODY,
    ),
    "a space before the colon": post("1.1", `Content-Length : ${BODY.length}\r\n`, BODY),
    "bare LF line ends": `POST /v1/pets HTTP/1.1\nHost: gw\n${AUTH.trim()}\nContent-Type: application/json\nContent-Length: ${BODY.length}\n\n${BODY}`,
    "a bare LF inside the header block": post("1.1", `X-Note: a\nContent-Length: ${BODY.length}\r\n`, BODY),
    "a NUL in a header value": post("1.1", `X-Note: a\u0000b\r\nContent-Length: ${BODY.length}\r\n`, BODY),
    "Transfer-Encoding: chunked, identity": post("1.1", "Transfer-Encoding: chunked, identity\r\n", chunked),
    "a chunked body on HTTP/1.0": post("1.0", "Transfer-Encoding: chunked\r\n", chunked),
    "a chunked body on HTTP/1.0 with keep-alive": post(
      "1.0",
      "Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n",
      chunked,
    ),
    "Transfer-Encoding: gzip, chunked": post("1.1", "Transfer-Encoding: gzip, chunked\r\n", chunked),
    "a malformed chunk size": post("1.1", "Transfer-Encoding: chunked\r\n", `zz\r\n${BODY}\r\n0\r\n\r\n`),
    "a negative Content-Length": post("1.1", "Content-Length: -1\r\n", BODY),
    "a Content-Length beyond 2^64": post("1.1", "Content-Length: 99999999999999999999999\r\n", BODY),
    "no Host header": `POST /v1/pets HTTP/1.1\r\n${AUTH}${JSON_BODY}`,
    "two Host headers": `POST /v1/pets HTTP/1.1\r\nHost: gw\r\nHost: evil.example\r\n${AUTH}${JSON_BODY}`,
    "HTTP/2.0 in the request line": `POST /v1/pets HTTP/2.0\r\nHost: gw\r\n${AUTH}${JSON_BODY}`,
    "HTTP/1.2 in the request line": `POST /v1/pets HTTP/1.2\r\nHost: gw\r\n${AUTH}${JSON_BODY}`,
    "an HTTP/2 preface": "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    "a lowercase method": `post /v1/pets HTTP/1.1\r\nHost: gw\r\n${AUTH}${JSON_BODY}`,
    "a tab in a header name": post("1.1", `X\tNote: 1\r\nContent-Length: ${BODY.length}\r\n`, BODY),
    "a NUL in the path": `GET /v1/pets\u0000 HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\n`,
    "a raw non-ASCII byte in the path": `GET /v1/pets/\u00e9 HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\n`,
    CONNECT: "CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n",
    "headers over the size cap": `GET /v1/pets HTTP/1.1\r\nHost: gw\r\nX-Big: ${"a".repeat(20_000)}\r\n${AUTH}\r\n`,
    "a body over the size cap": post("1.1", "Content-Length: 70000\r\n", "{"),
  };
}

export interface Dribbler {
  readonly openedAt: number;
  closedAt: number | undefined;
  received: string;
}

/** A socket that sends a request line and then one header line every `everyMs`, forever (slowloris). */
export function dribble(port: number, everyMs: number, target = "/v1/pets"): Dribbler {
  const state: Dribbler = { openedAt: performance.now(), closedAt: undefined, received: "" };
  const socket = net.connect(port, "127.0.0.1");
  socket.setEncoding("latin1");
  let n = 0;
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(`X-Drip-${n++}: 1\r\n`);
  }, everyMs);
  const closed = () => {
    clearInterval(timer);
    state.closedAt ??= performance.now();
    socket.destroy();
  };
  socket.on("connect", () => socket.write(`GET ${target} HTTP/1.1\r\nHost: gw\r\n`));
  socket.on("data", (data: string) => {
    state.received += data;
  });
  socket.on("error", closed);
  socket.on("end", closed);
  socket.on("close", closed);
  return state;
}

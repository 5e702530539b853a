// Bytes on a socket, for what an HTTP client refuses to send or would hide: framing, pipelining,
// a client that never finishes its headers.
import net from "node:net";

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
  /** The socket error's code, if any (ECONNREFUSED: nobody listened; ECONNRESET: a reset). */
  readonly error: string | undefined;
}

/**
 * Writes bytes on a fresh connection (each string of `parts` as its own write, `gapMs` apart) and
 * collects everything that comes back until the gateway closes the connection, `responses`
 * answers have come whole, the test aborts `signal`, or `waitMs` pass.
 */
export function rawExchange(
  port: number,
  parts: string | readonly string[],
  options: {
    readonly waitMs?: number;
    readonly gapMs?: number;
    /** Called once every part has been handed to the socket. */
    readonly onWritten?: () => void;
    /** Done once this many answers have come whole: a kept-alive connection is not waited out. */
    readonly responses?: number;
    /** Done when aborted: the test has seen what it waited for and leaves. */
    readonly signal?: AbortSignal;
  } = {},
): Promise<RawOutcome> {
  const chunks = typeof parts === "string" ? [parts] : parts;
  const waitMs = options.waitMs ?? 2000;
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let text = "";
    let done = false;
    let error: string | undefined;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, responses: parseResponses(text), closed, error });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    options.signal?.addEventListener("abort", () => finish(false), { once: true });
    socket.setEncoding("latin1");
    socket.on("data", (data: string) => {
      text += data;
      if (options.responses !== undefined && wholeResponses(text) >= options.responses) finish(false);
    });
    socket.on("error", (failure: NodeJS.ErrnoException) => {
      error = failure.code ?? failure.message;
      finish(true);
    });
    socket.on("end", () => finish(true));
    socket.on("close", () => finish(true));
    socket.on("connect", async () => {
      for (let i = 0; i < chunks.length; i++) {
        if (i > 0 && options.gapMs) await new Promise((wake) => setTimeout(wake, options.gapMs));
        if (socket.destroyed) return;
        socket.write(chunks[i] as string, "latin1");
      }
      options.onWritten?.();
    });
  });
}

/** How many responses of the stream have come whole (a body without a length is whole only at the close). */
function wholeResponses(text: string): number {
  let count = 0;
  let rest = text;
  for (;;) {
    const end = rest.indexOf("\r\n\r\n");
    if (end === -1) return count;
    const head = rest.slice(0, end).toLowerCase();
    const status = Number(/^http\/1\.[01] (\d{3})/.exec(head)?.[1] ?? Number.NaN);
    rest = rest.slice(end + 4);
    const length = /\r\ncontent-length:\s*(\d+)/.exec(head)?.[1];
    if (status < 200 || status === 204 || status === 304) {
      // No body.
    } else if (length !== undefined) {
      if (rest.length < Number(length)) return count;
      rest = rest.slice(Number(length));
    } else if (/\r\ntransfer-encoding:\s*chunked/.test(head)) {
      const last = rest.indexOf("\r\n0\r\n\r\n");
      if (last === -1 && !rest.startsWith("0\r\n\r\n")) return count;
      rest = rest.startsWith("0\r\n\r\n") ? rest.slice(5) : rest.slice(last + 7);
    } else return count;
    count++;
  }
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

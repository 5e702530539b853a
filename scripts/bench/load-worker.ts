// The load generator when wrk is not used: a process of its own (forked with an IPC channel), so
// that it never shares an event loop with what it measures. It waits for run orders and answers
// with requests/s and latency percentiles.
// - Closed loop (as fast as the target answers): autocannon. Its own histogram keeps whole
//   milliseconds; the latencies here come from its per-response event, in fractions of a
//   millisecond, because the gateway's overhead is well under one.
// - Open loop at a fixed rate (openLoop below): requests leave on a fixed schedule whatever the
//   target does, and latency counts from the scheduled time (no coordinated omission).
//   autocannon's own rate limit is not used for this: it lets each connection send its quota
//   for the second as fast as it can, then wait, so "2,000 req/s" becomes bursts at full speed.
import { createRequire } from "node:module";
import net from "node:net";
import { percentile } from "./stats.ts";

export interface LoadOrder {
  readonly url: string;
  readonly method: "GET" | "POST";
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly connections: number;
  readonly durationS: number;
  /** Requests per second over all connections; omitted means as fast as the target answers. */
  readonly rate?: number;
  /** With rate: the open loop is used unless autocannon's per-connection quota is asked for. */
  readonly pacing?: "open" | "per-connection";
  /** Keys sent in turn, one per request, as `Authorization: Bearer <key>` (closed loop only). */
  readonly keys?: readonly string[];
}

export interface LoadResult {
  readonly requests: number;
  readonly seconds: number;
  readonly rps: number;
  /** Milliseconds. */
  readonly p50: number;
  readonly p99: number;
  readonly non2xx: number;
  readonly errors: number;
}

interface AutocannonInstance {
  on(event: "response", listener: (client: unknown, status: number, bytes: number, ms: number) => void): void;
}
interface AutocannonResult {
  readonly duration: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly requests: { readonly total: number };
}
type Autocannon = (
  options: Record<string, unknown>,
  done: (error: Error | null, result: AutocannonResult) => void,
) => AutocannonInstance;

const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

/** One response read off a keep-alive socket: where it ends in the buffer, and its status. */
function parseResponse(buffer: Buffer): { end: number; status: number } | undefined | "bad" {
  const headerEnd = buffer.indexOf("\r\n\r\n");
  if (headerEnd === -1) return undefined;
  const head = buffer.toString("latin1", 0, headerEnd);
  const status = Number(head.slice(9, 12));
  const length = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
  if (length) {
    const end = headerEnd + 4 + Number(length[1]);
    return buffer.length >= end ? { end, status } : undefined;
  }
  if (!/\r\ntransfer-encoding:[ \t]*chunked/i.test(head)) return "bad";
  let at = headerEnd + 4;
  for (;;) {
    const lineEnd = buffer.indexOf("\r\n", at);
    if (lineEnd === -1) return undefined;
    const size = Number.parseInt(buffer.toString("latin1", at, lineEnd), 16);
    if (Number.isNaN(size)) return "bad";
    at = lineEnd + 2 + size + 2;
    if (buffer.length < at) return undefined;
    if (size === 0) return { end: at, status };
  }
}

/**
 * Open loop over `connections` keep-alive sockets opened up front and held for the whole run:
 * requests leave on a fixed schedule, round-robin over the sockets (pipelined if a socket is
 * still busy), and latency counts from the scheduled time, so a slow answer is never hidden.
 */
async function openLoop(order: LoadOrder & { rate: number }): Promise<LoadResult> {
  const url = new URL(order.url);
  const body = order.body === undefined ? Buffer.alloc(0) : Buffer.from(order.body);
  const head = [`${order.method} ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`];
  for (const [name, value] of Object.entries(order.headers)) head.push(`${name}: ${value}`);
  if (order.body !== undefined) head.push(`content-length: ${body.length}`);
  const request = Buffer.concat([Buffer.from(`${head.join("\r\n")}\r\n\r\n`, "latin1"), body]);

  const total = Math.max(1, Math.round(order.rate * order.durationS));
  const latencies = new Float64Array(total);
  let ok = 0;
  let settled = 0;
  let non2xx = 0;
  let errors = 0;
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const settle = () => {
    if (++settled === total) finish();
  };

  interface Connection {
    readonly socket: net.Socket;
    readonly waiting: number[];
    buffer: Buffer;
    broken: boolean;
  }
  const connections: Connection[] = [];
  const open = (): Promise<Connection> =>
    new Promise((resolve, reject) => {
      const socket = net.connect({ host: url.hostname, port: Number(url.port), noDelay: true });
      const connection: Connection = { socket, waiting: [], buffer: Buffer.alloc(0), broken: false };
      const breakOff = () => {
        if (connection.broken) return;
        connection.broken = true;
        for (const _ of connection.waiting.splice(0)) {
          errors++;
          settle();
        }
      };
      socket.once("connect", () => resolve(connection));
      socket.once("error", (error) => {
        breakOff();
        reject(error);
      });
      socket.once("close", breakOff);
      socket.on("data", (chunk: Buffer) => {
        connection.buffer =
          connection.buffer.length === 0 ? chunk : Buffer.concat([connection.buffer, chunk]);
        for (;;) {
          const parsed = parseResponse(connection.buffer);
          if (parsed === undefined) return;
          if (parsed === "bad") {
            socket.destroy();
            return;
          }
          connection.buffer = connection.buffer.subarray(parsed.end);
          const scheduled = connection.waiting.shift();
          if (scheduled === undefined) continue;
          if (parsed.status >= 200 && parsed.status < 300) latencies[ok++] = performance.now() - scheduled;
          else non2xx++;
          settle();
        }
      });
    });
  // Opened a hundred at a time: a thousand SYNs at once would overflow the listen backlog.
  for (let i = 0; i < order.connections; i += 100) {
    const batch = Math.min(100, order.connections - i);
    connections.push(...(await Promise.all(Array.from({ length: batch }, open))));
  }

  const interval = 1000 / order.rate;
  const start = performance.now();
  let sent = 0;
  const send = (scheduled: number) => {
    const connection = connections[sent % connections.length] as Connection;
    if (connection.broken) {
      errors++;
      settle();
      return;
    }
    connection.waiting.push(scheduled);
    connection.socket.write(request);
  };
  const tick = () => {
    const due = Math.min(total, Math.floor((performance.now() - start) / interval) + 1);
    for (; sent < due; ) send(start + sent++ * interval);
    if (sent < total) setTimeout(tick, 1);
  };
  tick();
  // Whatever is still unanswered this long after the last send counts as an error.
  const giveUp = setTimeout(finish, order.durationS * 1000 + 10_000);
  await done;
  clearTimeout(giveUp);
  const seconds = (performance.now() - start) / 1000;
  for (const connection of connections) connection.socket.destroy();
  const sorted = latencies.subarray(0, ok).sort();
  return {
    requests: settled,
    seconds,
    rps: settled / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    non2xx,
    errors: errors + (total - settled),
  };
}

function run(order: LoadOrder): Promise<LoadResult> {
  if (order.rate !== undefined && order.pacing !== "per-connection")
    return openLoop({ ...order, rate: order.rate });
  return new Promise((resolve, reject) => {
    let latencies = new Float64Array(1 << 16);
    let count = 0;
    const instance = autocannon(
      {
        url: order.url,
        method: order.method,
        headers: order.headers,
        ...(order.body === undefined ? {} : { body: order.body }),
        ...(order.keys === undefined ? {} : { requests: [{ setupRequest: rotateKeys(order.keys) }] }),
        connections: order.connections,
        duration: order.durationS,
        ...(order.rate === undefined ? {} : { overallRate: order.rate }),
        timeout: 10,
      },
      (error, result) => {
        if (error) return reject(error);
        const sorted = latencies.subarray(0, count).sort();
        resolve({
          requests: result.requests.total,
          seconds: result.duration,
          rps: result.requests.total / result.duration,
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          non2xx: result.non2xx,
          errors: result.errors + result.timeouts,
        });
      },
    );
    instance.on("response", (_client, status, _bytes, ms) => {
      if (status < 200 || status > 299) return;
      if (count === latencies.length) {
        const grown = new Float64Array(latencies.length * 2);
        grown.set(latencies);
        latencies = grown;
      }
      latencies[count++] = ms;
    });
  });
}

/** autocannon's per-request hook: the next key of the list on each request, over every connection. */
function rotateKeys(keys: readonly string[]) {
  let next = 0;
  return (request: { headers?: Record<string, string> }) => {
    next = (next + 1) % keys.length;
    request.headers = { ...request.headers, authorization: `Bearer ${keys[next]}` };
    return request;
  };
}

if (process.send) {
  process.on("message", (message: { id: number; order: LoadOrder }) => {
    run(message.order).then(
      (result) => process.send?.({ id: message.id, result }),
      (error: unknown) => process.send?.({ id: message.id, error: String(error) }),
    );
  });
  process.on("disconnect", () => process.exit(0));
}

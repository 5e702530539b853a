// Which of undici's APIs the gateway's upstream leg uses (src/proxy.ts): the same proxy written
// three ways, each holding the backend's answer whole before sending it (what the gateway does
// with every JSON answer a policy reads), or streaming it with --stream:
//   dispatch  Pool#dispatch with a handler object: chunks arrive in onResponseData
//   stream    Pool#stream: the factory returns a Writable the body is written to
//   request   Pool#request: the body is a Readable (undici's BodyReadable)
//   http-proxy-3  the client the gateway used before, with Node's keep-alive agent, for reference
// A microbenchmark, not the benchmark: one backend (scripts/bench/static-backend.ts), each proxy in
// a process of its own, autocannon from this process, interleaved rounds; it prints each API's
// req/s and proxy CPU per request, and their ratios to dispatch's, per round and as medians.
//   node scripts/bench/upstream-api.ts [--rounds 6] [--seconds 3] [--connections 32] [--stream]
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { parseArgs } from "node:util";
import { createProxyServer } from "http-proxy-3";
import { type Dispatcher, Pool } from "undici";
import { cpuMs, setUpProcesses, startNode, stop } from "./processes.ts";

const APIS = ["dispatch", "stream", "request", "http-proxy-3"] as const;
type Api = (typeof APIS)[number];

const { values } = parseArgs({
  options: {
    serve: { type: "string" },
    target: { type: "string" },
    rounds: { type: "string", default: "6" },
    seconds: { type: "string", default: "3" },
    connections: { type: "string", default: "32" },
    stream: { type: "boolean", default: false },
  },
});

if (values.serve) serve(values.serve as Api, values.target as string, values.stream);
else await compare();

function serve(api: Api, target: string, streamed: boolean): void {
  const origin = new URL(target).origin;
  const base = new URL(target).pathname.replace(/\/+$/, "");
  const pool = new Pool(origin, {
    connections: 256,
    pipelining: 1,
    keepAliveTimeout: 4000,
    keepAliveMaxTimeout: 4000,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const fail = (res: ServerResponse) => {
    if (res.headersSent) return res.destroy();
    res.writeHead(502, { "content-type": "application/json" });
    res.end('{"code":"UPSTREAM_UNAVAILABLE"}');
  };
  const optionsOf = (req: IncomingMessage): Dispatcher.DispatchOptions => ({
    path: `${base}${req.url ?? "/"}`,
    method: req.method as Dispatcher.HttpMethod,
    headers: { host: new URL(origin).host, accept: req.headers.accept ?? "*/*" },
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, timeout: 4000, scheduling: "lifo" });
  const proxy = createProxyServer({ target, agent, changeOrigin: true, selfHandleResponse: !streamed });
  proxy.on("error", (_error, _req, res) => {
    if (res instanceof http.ServerResponse) fail(res);
  });
  proxy.on("proxyRes", (answer: IncomingMessage, _req: IncomingMessage, res: ServerResponse) => {
    if (streamed) return;
    const chunks: Buffer[] = [];
    answer.on("data", (chunk: Buffer) => chunks.push(chunk));
    answer.on("end", () => {
      res.writeHead(answer.statusCode ?? 502, answer.headers as http.OutgoingHttpHeaders);
      res.end(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    });
  });
  const handlers: Record<Api, (req: IncomingMessage, res: ServerResponse) => void> = {
    "http-proxy-3"(req, res) {
      proxy.web(req, res);
    },
    dispatch(req, res) {
      pool.dispatch(optionsOf(req), new Held(res, streamed));
    },
    stream(req, res) {
      pool.stream(
        optionsOf(req),
        ({ statusCode, headers }) => {
          if (streamed) {
            res.writeHead(statusCode, headers as http.OutgoingHttpHeaders);
            return res;
          }
          const chunks: Buffer[] = [];
          return new Writable({
            write(chunk: Buffer, _encoding, done) {
              chunks.push(chunk);
              done();
            },
            final(done) {
              res.writeHead(statusCode, headers as http.OutgoingHttpHeaders);
              res.end(Buffer.concat(chunks));
              done();
            },
          });
        },
        (error) => {
          if (error) fail(res);
        },
      );
    },
    request(req, res) {
      pool.request(optionsOf(req), (error, data) => {
        if (error) return fail(res);
        if (streamed) {
          res.writeHead(data.statusCode, data.headers as http.OutgoingHttpHeaders);
          data.body.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        data.body.on("data", (chunk: Buffer) => chunks.push(chunk));
        data.body.on("end", () => {
          res.writeHead(data.statusCode, data.headers as http.OutgoingHttpHeaders);
          res.end(Buffer.concat(chunks));
        });
        data.body.on("error", () => fail(res));
      });
    },
  };

  class Held implements Dispatcher.DispatchHandler {
    readonly res: ServerResponse;
    readonly streamed: boolean;
    chunks: Buffer[] = [];
    status = 0;
    headers: http.IncomingHttpHeaders = {};
    constructor(res: ServerResponse, streamed: boolean) {
      this.res = res;
      this.streamed = streamed;
    }
    onRequestStart() {}
    onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: http.IncomingHttpHeaders) {
      this.status = status;
      this.headers = headers;
      if (this.streamed) this.res.writeHead(status, headers as http.OutgoingHttpHeaders);
    }
    onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer) {
      if (!this.streamed) this.chunks.push(chunk);
      else if (!this.res.write(chunk)) {
        controller.pause();
        this.res.once("drain", () => controller.resume());
      }
    }
    onResponseEnd() {
      if (this.streamed) return void this.res.end();
      this.res.writeHead(this.status, this.headers as http.OutgoingHttpHeaders);
      this.res.end(this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks));
    }
    onResponseError(_c: unknown, error: Error) {
      if (process.env.UPSTREAM_API_DEBUG) console.error(error);
      fail(this.res);
    }
  }

  const server = http.createServer({ keepAliveTimeout: 75_000 }, handlers[api]);
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo;
    process.stdout.write(`${JSON.stringify({ event: "listening", url: `http://127.0.0.1:${port}` })}\n`);
  });
  process.once("SIGTERM", () => process.exit(0));
}

type Autocannon = (
  options: Record<string, unknown>,
  done: (error: Error | null, result: AutocannonResult) => void,
) => unknown;
interface AutocannonResult {
  readonly duration: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly requests: { readonly total: number };
}

async function compare(): Promise<void> {
  setUpProcesses();
  const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;
  const rounds = Number(values.rounds);
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const backend = await startNode("backend", ["scripts/bench/static-backend.ts"]);
  const runs = new Map<Api, { rps: number; cpuUs: number }[]>(APIS.map((api) => [api, []]));
  for (let round = 0; round < rounds; round++) {
    // Interleaved, and the order turned each round, so that drift in the machine's load is shared.
    const order = APIS.map((_, i) => APIS[(i + round) % APIS.length] as Api);
    for (const api of order) {
      const args = ["scripts/bench/upstream-api.ts", "--serve", api, "--target", backend.url];
      if (values.stream) args.push("--stream");
      const proxy = await startNode(api, args);
      const run = (duration: number) =>
        new Promise<AutocannonResult>((resolve, reject) => {
          autocannon({ url: `${proxy.url}/pets`, connections, duration }, (error, result) =>
            error ? reject(error) : resolve(result),
          );
        });
      await run(1); // warm-up
      const pid = proxy.child.pid as number;
      const cpuBefore = cpuMs(pid) ?? 0;
      const result = await run(seconds);
      const cpu = (cpuMs(pid) ?? 0) - cpuBefore;
      if (result.non2xx + result.errors > 0)
        throw new Error(`${api}: ${result.non2xx} non-2xx, ${result.errors} errors`);
      runs
        .get(api)
        ?.push({ rps: result.requests.total / result.duration, cpuUs: (cpu * 1000) / result.requests.total });
      await stop(proxy.child);
    }
  }
  await stop(backend.child);
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
  };
  const base = runs.get("dispatch") ?? [];
  process.stdout.write(
    `${values.stream ? "streamed" : "held"} answers, ${connections} connections, ${rounds} rounds of ${seconds} s\n`,
  );
  process.stdout.write("api           req/s   CPU µs/req   req/s ÷ dispatch   CPU ÷ dispatch\n");
  for (const api of APIS) {
    const own = runs.get(api) ?? [];
    const rpsRatio = median(own.map((r, i) => r.rps / (base[i]?.rps ?? 1)));
    const cpuRatio = median(own.map((r, i) => r.cpuUs / (base[i]?.cpuUs ?? 1)));
    process.stdout.write(
      `${api.padEnd(13)} ${median(own.map((r) => r.rps))
        .toFixed(0)
        .padStart(6)}   ${median(own.map((r) => r.cpuUs))
        .toFixed(1)
        .padStart(10)}   ${rpsRatio.toFixed(2).padStart(16)}   ${cpuRatio.toFixed(2).padStart(14)}\n`,
    );
  }
}

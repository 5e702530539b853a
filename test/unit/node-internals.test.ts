// The private Node APIs the gateway relies on (src/node-internals.ts), checked on a real server:
// when one of these fails after a Node upgrade, pipelining limits and mid-request refusals have
// stopped working even if every other test still passes.
import assert from "node:assert/strict";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import net, { type AddressInfo, type Socket } from "node:net";
import { after, before, test } from "node:test";
import { pendingResponse, resumeReadingSocket, stopReadingSocket } from "../../src/node-internals.ts";

let server: http.Server;
let port: number;
const arrived: { req: IncomingMessage; res: ServerResponse }[] = [];
let onArrival: (() => void) | undefined;
let onClientError: ((socket: Socket) => void) | undefined;

before(async () => {
  server = http.createServer((req, res) => {
    arrived.push({ req, res });
    onArrival?.();
  });
  server.on("clientError", (_error, socket: Socket) => {
    onClientError?.(socket);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function nextArrival(): Promise<{ req: IncomingMessage; res: ServerResponse }> {
  const seen = arrived.length;
  return new Promise((resolve) => {
    onArrival = () => {
      const next = arrived[seen];
      if (next) resolve(next);
    };
  });
}

function connect(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

test("a server connection's socket has a libuv handle with readStop and readStart", async () => {
  const client = await connect();
  const arrival = nextArrival();
  client.write("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  const { req, res } = await arrival;
  const handle = (req.socket as unknown as { _handle?: Record<string, unknown> })._handle;
  assert.equal(typeof handle?.readStop, "function");
  assert.equal(typeof handle?.readStart, "function");
  res.end();
  client.destroy();
});

// That the stop holds (the client's window fills) is what test/hardening-pipelining.test.ts shows
// end to end; here: stopping and starting again through the handle leaves the connection serving.
test("a connection stopped at its handle and read again parses what the client sent meanwhile", async () => {
  const client = await connect();
  const first = nextArrival();
  client.write("GET /first HTTP/1.1\r\nHost: x\r\n\r\n");
  const { req, res } = await first;
  stopReadingSocket(req.socket);
  const second = nextArrival();
  client.write("GET /second HTTP/1.1\r\nHost: x\r\n\r\n");
  setImmediate(() => resumeReadingSocket(req.socket));
  const next = await second;
  assert.equal(next.req.url, "/second");
  res.end();
  next.res.end();
  client.destroy();
});

test("_httpMessage is the answer pending on a connection, also when its request breaks mid-body", async () => {
  const client = await connect();
  const arrival = nextArrival();
  client.write("POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  const { req, res } = await arrival;
  assert.equal(pendingResponse(req.socket), res);
  const broken = new Promise<ServerResponse | undefined>((resolve) => {
    onClientError = (socket) => resolve(pendingResponse(socket));
  });
  client.write("zz\r\nnot a chunk\r\n");
  assert.equal(await broken, res);
  onClientError = undefined;
  client.destroy();
});

test("a connection with no request in flight has no pending answer", async () => {
  const client = await connect();
  const arrival = nextArrival();
  client.write("GET /done HTTP/1.1\r\nHost: x\r\n\r\n");
  const { req, res } = await arrival;
  await new Promise<void>((resolve) => res.end(resolve));
  assert.equal(pendingResponse(req.socket), undefined);
  client.destroy();
});

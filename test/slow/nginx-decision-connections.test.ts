// The generated nginx config under concurrent clients, with Debian's nginx: each request asks the
// decision service, then the backend; both legs must reuse their connections. An nginx that keeps
// fewer idle connections than the requests it carries at once opens and closes one per request
// beyond them (1,500 connections to the decision service in two seconds of 50 clients, when it
// kept 32), which costs both sides a handshake and fills the port range with TIME_WAIT.
import assert from "node:assert/strict";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import { nginxConfig } from "../../src/decision/nginx-config.ts";
import { contractOf } from "../../src/decision/proxy-config.ts";
import { writeKeysFile } from "../support/keys.ts";
import { freePort, type NginxProcess, nginxSkipReason, startNginx } from "../support/nginx.ts";

/** A server that answers every request with `answer` and counts the connections it accepted. */
async function countingServer(answer: (res: http.ServerResponse) => void) {
  const server = http.createServer((req, res) => {
    req.resume();
    answer(res);
  });
  server.keepAliveTimeout = 75_000;
  let connections = 0;
  server.on("connection", () => connections++);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    async close() {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}

const CLIENTS = 50;
const ROUNDS = 20;

describe("nginx's generated config with 50 concurrent clients", { skip: nginxSkipReason() }, () => {
  let decision: Awaited<ReturnType<typeof countingServer>>;
  let backend: Awaited<ReturnType<typeof countingServer>>;
  let nginx: NginxProcess;
  before(async () => {
    // An allowing decision service, as the nginx door answers: the target, the consumer.
    decision = await countingServer((res) =>
      res
        .writeHead(200, {
          "x-gateway-upstream-uri": "/pets?limit=20",
          "x-gateway-upstream-x-consumer": "alice",
          "content-length": 0,
        })
        .end(),
    );
    backend = await countingServer((res) =>
      res.writeHead(200, { "content-type": "application/json" }).end("[]"),
    );
    const keys = writeKeysFile(["alice"]);
    const contract = await contractOf(
      validateConfig({ mode: "decision", policies: { auth: { keysFile: keys.file } } }, policies),
      policies,
    );
    const port = await freePort();
    nginx = await startNginx(
      nginxConfig(contract, {
        decisionUrl: decision.origin,
        upstreamUrl: `${backend.origin}/v1`,
        listenPort: port,
        timeoutMs: 1000,
      }),
      port,
    );
  });
  after(async () => {
    await nginx?.stop();
    await decision?.close();
    await backend?.close();
  });

  test("the decision service and the backend each see about one connection per concurrent client, not one per request", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
    const one = () =>
      new Promise<number>((resolve, reject) => {
        http
          .get(`${nginx.origin}/v1/pets`, { agent }, (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode ?? 0));
          })
          .on("error", reject);
      });
    const [decided, served] = [decision.connections(), backend.connections()];
    for (let round = 0; round < ROUNDS; round++) {
      const statuses = await Promise.all(Array.from({ length: CLIENTS }, one));
      assert.deepEqual(
        statuses.filter((status) => status !== 200),
        [],
      );
    }
    agent.destroy();
    const requests = CLIENTS * ROUNDS;
    const toDecision = decision.connections() - decided;
    const toBackend = backend.connections() - served;
    // Every request reached both: nginx kept its connections open across the rounds.
    assert.ok(
      toDecision <= CLIENTS + 10,
      `${toDecision} connections to the decision service for ${requests} requests`,
    );
    assert.ok(toBackend <= CLIENTS + 10, `${toBackend} connections to the backend for ${requests} requests`);
  });
});

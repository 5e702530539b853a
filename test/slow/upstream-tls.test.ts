// A backend behind https: the gateway program reaches it with TLS (verifying its certificate as
// Node does, extra authorities from NODE_EXTRA_CA_CERTS), and one it cannot trust is an upstream
// fault, not a crash.
import assert from "node:assert/strict";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { eventually } from "../support/eventually.ts";
import { startGatewayProgram } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { sampleValue, scrape } from "../support/metrics.ts";
import { PROJECT_ROOT } from "../support/program.ts";

const CERTIFICATE = join(PROJECT_ROOT, "test/fixtures/tls-backend.crt");
const PETS = JSON.stringify([{ id: 1, name: "Rex", categoryId: 1, status: "available" }]);

// Each test starts a program of its own: they run side by side.
describe("an https backend", { concurrency: true }, () => {
  const keys = writeKeysFile(["acme"]);
  const { key } = keys;
  let backend: https.Server;
  let backendUrl: string;
  const seen: string[] = [];

  before(async () => {
    backend = https.createServer(
      {
        key: readFileSync(join(PROJECT_ROOT, "test/fixtures/tls-backend.key")),
        cert: readFileSync(CERTIFICATE),
      },
      (req, res) => {
        seen.push(`${req.method} ${req.url}`);
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(PETS) });
        res.end(PETS);
      },
    );
    backend.listen(0, "127.0.0.1");
    await once(backend, "listening");
    backendUrl = `https://127.0.0.1:${(backend.address() as AddressInfo).port}/v1`;
  });
  after(() => {
    backend.closeAllConnections();
    backend.close();
  });

  test("whose certificate the gateway trusts is proxied over TLS, and the gauge says it is up", async (t) => {
    const gateway = await startGatewayProgram(
      { upstreamUrl: backendUrl, keys, env: { NODE_EXTRA_CA_CERTS: CERTIFICATE } },
      t,
    );
    await eventually("the start-up probe's TLS handshake", async () => {
      return sampleValue(await scrape(gateway), "gateway_upstream_up") === 1;
    });
    const answer = await request(`${gateway.origin}/v1/pets`, { key });
    assert.equal(answer.status, 200, answer.body);
    assert.equal(answer.body, PETS);
    assert.ok(seen.includes("GET /v1/pets?limit=20"), seen.join(", "));
  });

  test("whose certificate the gateway does not trust gets 502, the gauge reads 0, and the gateway keeps serving", async (t) => {
    const gateway = await startGatewayProgram({ upstreamUrl: backendUrl, keys }, t);
    const answer = await request(`${gateway.origin}/v1/pets`, { key });
    assert.equal(answer.status, 502, answer.body);
    assert.equal((answer.json() as { code: string }).code, "UPSTREAM_UNAVAILABLE");
    assert.equal(sampleValue(await scrape(gateway), "gateway_upstream_up"), 0);
    assert.equal((await request(`${gateway.opsUrl}/healthz`)).status, 200);
    assert.equal((await request(`${gateway.origin}/v1/pets`, { key })).status, 502);
    assert.equal(gateway.child.exitCode, null);
  });
});

// A backend behind https: the gateway program reaches it with TLS (verifying its certificate as
// Node does, extra authorities from NODE_EXTRA_CA_CERTS), and one it cannot trust is an upstream
// fault, not a crash.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { eventually } from "./support/eventually.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { sampleValue, scrape } from "./support/metrics.ts";
import { type GatewayProcess, startGatewayProcess } from "./support/processes.ts";
import { PROJECT_ROOT } from "./support/program.ts";

const CERTIFICATE = join(PROJECT_ROOT, "test/fixtures/tls-backend.crt");
const PETS = JSON.stringify([{ id: 1, name: "Rex", categoryId: 1, status: "available" }]);

describe("an https backend", () => {
  const { file: keysFile, key } = writeKeysFile(["acme"]);
  let backend: https.Server;
  let backendUrl: string;
  const seen: string[] = [];
  const gateways: GatewayProcess[] = [];

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
  after(async () => {
    for (const gateway of gateways) await gateway.stop();
    backend.closeAllConnections();
    backend.close();
  });

  // Nothing to drain at the end: the gateways stop at once.
  const configFile = join(mkdtempSync(join(tmpdir(), "gw-tls-")), "gateway.json");
  writeFileSync(configFile, JSON.stringify({ server: { shutdownDrainMs: 0 } }));

  const start = async (env: Record<string, string>) => {
    const gateway = await startGatewayProcess({
      UPSTREAM_URL: backendUrl,
      API_KEYS_FILE: keysFile,
      GATEWAY_CONFIG: configFile,
      ...env,
    });
    gateways.push(gateway);
    return gateway;
  };

  test("whose certificate the gateway trusts is proxied over TLS, and the gauge says it is up", async () => {
    const gateway = await start({ NODE_EXTRA_CA_CERTS: CERTIFICATE });
    await eventually("the start-up probe's TLS handshake", async () => {
      return sampleValue(await scrape(gateway), "gateway_upstream_up") === 1;
    });
    const answer = await request(`${gateway.origin}/v1/pets`, { key });
    assert.equal(answer.status, 200, answer.body);
    assert.equal(answer.body, PETS);
    assert.ok(seen.includes("GET /v1/pets?limit=20"), seen.join(", "));
  });

  test("whose certificate the gateway does not trust gets 502, the gauge reads 0, and the gateway keeps serving", async () => {
    const gateway = await start({});
    const answer = await request(`${gateway.origin}/v1/pets`, { key });
    assert.equal(answer.status, 502, answer.body);
    assert.equal((answer.json() as { code: string }).code, "UPSTREAM_UNAVAILABLE");
    assert.equal(sampleValue(await scrape(gateway), "gateway_upstream_up"), 0);
    assert.equal((await request(`${gateway.opsUrl}/healthz`)).status, 200);
    assert.equal((await request(`${gateway.origin}/v1/pets`, { key })).status, 502);
    assert.equal(gateway.child.exitCode, null);
  });
});

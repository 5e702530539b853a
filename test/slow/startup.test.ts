import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { type TestContext, test } from "node:test";
import { validateConfig } from "../../src/config.ts";
import { definePolicy } from "../../src/policy.ts";
import { eventually } from "../support/eventually.ts";
import { runGatewayProgram, startGatewayProgram } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { childEnv, PROJECT_ROOT } from "../support/program.ts";
import { makeFifo } from "../support/stuck-reads.ts";

/**
 * The gateway program run to its end (killed and failed past 30 s), on ports the OS chooses, with
 * the default config file and no key file unless `env` names them.
 */
async function startUp(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const { code, stderr } = await runGatewayProgram({ keys: false, env: { GATEWAY_CONFIG: "", ...env } });
  return { code: code ?? -1, stderr };
}

test("an environment variable with a bad value is named in the one-line start-up error", async () => {
  const { code, stderr } = await startUp({ PORT: "eighty" });
  assert.equal(code, 1);
  assert.equal(stderr.trim().split("\n").length, 1);
  assert.match(stderr, /PORT \(\/port\) must be integer/);
  const level = await startUp({ LOG_LEVEL: "loud" });
  assert.match(level.stderr, /LOG_LEVEL \(\/log\/level\) must be one of fatal, error/);
});

test("an OpenAPI description that does not compile stops start-up with a message naming the problem", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-openapi-"));
  const broken = join(dir, "openapi.json");
  writeFileSync(
    broken,
    JSON.stringify({
      openapi: "3.1.0",
      info: { title: "x", version: "1" },
      paths: { "/pets": { get: { operationId: "listPets", responses: { 200: { description: "ok" } } } } },
      components: { schemas: { Error: { type: "object", properties: { code: { type: "strang" } } } } },
    }),
  );
  const { code, stderr } = await startUp({ OPENAPI_FILE: broken });
  assert.equal(code, 1);
  assert.match(stderr, /OpenAPI description .*openapi\.json: .*components\.schemas\.Error|schema is invalid/);
  const missing = await startUp({ OPENAPI_FILE: join(dir, "nope.json") });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /cannot read the OpenAPI description/);
});

test("a config file that is not JSON, or an OpenAPI description that is neither JSON nor YAML, stops start-up with one line saying where", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-not-json-"));
  const notJson = join(dir, "not.json");
  // V8's own message quotes the text, and with it the newline: two lines on stderr.
  writeFileSync(notJson, "not json\n");
  const config = await startUp({ GATEWAY_CONFIG: notJson });
  assert.equal(config.code, 1);
  assert.equal(config.stderr.trim().split("\n").length, 1, config.stderr);
  assert.match(
    config.stderr,
    /^petstore-gateway: config .*not\.json: the file is not valid JSON \(line 1, column 1\)$/m,
  );
  // "not json" is a YAML string; a description may be YAML, so it is told apart from an object.
  const notADocument = await startUp({ OPENAPI_FILE: notJson });
  assert.match(
    notADocument.stderr,
    /cannot read the OpenAPI description .*not\.json: the file holds a string, not an OpenAPI document/,
  );
  const notYaml = join(dir, "openapi.yaml");
  writeFileSync(notYaml, "openapi: 3.1.0\ninfo: [oops\n");
  const openapi = await startUp({ OPENAPI_FILE: notYaml });
  assert.equal(openapi.code, 1);
  assert.equal(openapi.stderr.trim().split("\n").length, 1, openapi.stderr);
  assert.match(
    openapi.stderr,
    /cannot read the OpenAPI description .*openapi\.yaml: the file is not valid YAML: .+ \(line \d+, column \d+\)$/m,
  );
});

test("a FIFO named as the document, the config or the key file stops start-up at once with one line naming it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-fifo-"));
  const fifo = join(dir, "openapi.yaml");
  makeFifo(fifo);
  const refusal = "is a FIFO \\(named pipe\\), not a regular file: the gateway reads only regular files";
  const started = performance.now();
  const document = await startUp({ OPENAPI_FILE: fifo });
  assert.ok(performance.now() - started < 10_000, "refused, not waited on");
  assert.equal(document.code, 1);
  assert.equal(document.stderr.trim().split("\n").length, 1, document.stderr);
  assert.match(
    document.stderr,
    new RegExp(`^petstore-gateway: cannot read the OpenAPI description ${fifo}: the file ${refusal}`, "m"),
  );
  const config = await startUp({ GATEWAY_CONFIG: fifo });
  assert.equal(config.code, 1);
  assert.match(config.stderr, new RegExp(`^petstore-gateway: config ${fifo}: the file ${refusal}`, "m"));
  const keys = await startUp({ API_KEYS_FILE: fifo });
  assert.equal(keys.code, 1);
  assert.match(keys.stderr, new RegExp(`^petstore-gateway: API key file ${fifo}: the file ${refusal}`, "m"));
});

test("npm start and npm test stop at once on a Node older than 22 and say how to get a newer one", (t) => {
  let old: string | undefined;
  for (const candidate of ["/usr/bin/node", "/usr/local/bin/node"]) {
    try {
      const version = execFileSync(candidate, ["--version"], { encoding: "utf8" }).trim();
      if (Number(version.slice(1).split(".")[0]) < 22) old = candidate;
    } catch {
      // not installed here
    }
  }
  if (old === undefined) return t.skip("no Node older than 22 on this machine");
  let failure: { status: number; stderr: string } | undefined;
  try {
    execFileSync(old, ["scripts/require-node.cjs"], { cwd: PROJECT_ROOT, encoding: "utf8", stdio: "pipe" });
  } catch (error) {
    failure = error as { status: number; stderr: string };
  }
  assert.equal(failure?.status, 1);
  assert.match(failure?.stderr ?? "", /needs Node 22\.18 or newer/);
  assert.match(failure?.stderr ?? "", /npm install -g --prefix "\$HOME\/\.local\/node24" node@24/);
});

test("the demo uses a key file named in the config file instead of generating a key", async (t) => {
  const configured = writeKeysFile(["configured"]);
  const program = await startGatewayProgram(
    { config: { policies: { auth: { keysFile: configured.file } } } },
    t,
  );
  const [line = ""] = program.stderr().split("\n");
  assert.match(line, /Bearer <a key from your key file>/, "no key is generated when one is configured");
  const url = /(http:\/\/localhost:\d+\/v1\/pets)/.exec(line)?.[1] as string;
  assert.equal((await request(url, { key: configured.key })).status, 200);
});

test("bad policy options and a shared public and ops port are refused with one line naming the field", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-config-"));
  const configFile = join(dir, "gateway.json");
  writeFileSync(
    configFile,
    JSON.stringify({ policies: { responseContract: { operations: { nope: "enforce" } } } }),
  );
  const policy = await startUp({ GATEWAY_CONFIG: configFile });
  assert.equal(policy.code, 1);
  assert.equal(policy.stderr.trim().split("\n").length, 1, policy.stderr);
  assert.match(policy.stderr, /policies\.responseContract\.operations\.nope/);

  const ports = await startUp({ PORT: "18123", OPS_PORT: "18123" });
  assert.equal(ports.code, 1);
  assert.equal(ports.stderr.trim().split("\n").length, 1, ports.stderr);
  assert.match(ports.stderr, /OPS_PORT \(\/opsPort\) must differ from PORT \(\/port\)/);
});

test("a setting with alternatives says what it accepts when refused", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-config-"));
  const configFile = join(dir, "gateway.json");
  writeFileSync(configFile, JSON.stringify({ upstream: { probeIntervalMs: 50 } }));
  const probe = await startUp({ GATEWAY_CONFIG: configFile });
  assert.equal(probe.code, 1);
  assert.match(probe.stderr, /\/upstream\/probeIntervalMs must be 0 or an integer from 100 to 86400000/);
  const workers = await startUp({ WORKERS: "abc" });
  assert.equal(workers.code, 1);
  assert.match(workers.stderr, /WORKERS \(\/workers\) must be an integer from 1 to 256 or "auto"/);
});

test("a trusted proxy is an address or a range; a host name is refused: it would never match a peer", () => {
  for (const entry of ["lb.internal", "10.0.0.0/33", "10.0.0/8", "fd00::/129", "10.0.0.0/08"]) {
    assert.throws(
      () => validateConfig({ server: { trustedProxies: ["127.0.0.1", entry] } }, []),
      /^ConfigError: invalid config: \/server\/trustedProxies\/1 must be an IPv4 address or an IPv6 address or a range such as 10\.0\.0\.0\/8 or fd00::\/8$/,
      entry,
    );
  }
  const entries = ["127.0.0.1", "::1", "::ffff:10.1.2.3", "10.0.0.0/8", "fd00::/8"];
  assert.deepEqual(
    validateConfig({ server: { trustedProxies: entries } }, []).server.trustedProxies,
    entries,
  );
});

test("a trusted IPv6 range whose address is not one stops start-up with the one line of any bad value", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-config-"));
  const configFile = join(dir, "gateway.json");
  writeFileSync(configFile, JSON.stringify({ server: { trustedProxies: ["fd00:::1::/8"] } }));
  const { code, stderr } = await startUp({ GATEWAY_CONFIG: configFile });
  assert.equal(code, 1);
  assert.equal(
    stderr,
    `petstore-gateway: invalid config: ${configFile}: /server/trustedProxies/0 must be an IPv4 address or an IPv6 address or a range such as 10.0.0.0/8 or fd00::/8\n`,
  );
});

test("a CORS origin with a path is refused with what an origin looks like", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-config-"));
  const configFile = join(dir, "gateway.json");
  writeFileSync(
    configFile,
    JSON.stringify({ policies: { cors: { allowedOrigins: ["https://shop.example/path"] } } }),
  );
  const { code, stderr } = await startUp({ GATEWAY_CONFIG: configFile });
  assert.equal(code, 1);
  assert.equal(
    stderr,
    `petstore-gateway: invalid config: ${configFile}: /policies/cors/allowedOrigins/0 must be "*" or an origin such as https://shop.example (scheme, host and optional port, no path)\n`,
  );
});

test("an alternative without a description is named by its pattern, in anyOf and oneOf alike", () => {
  const option = (keyword: string) =>
    definePolicy<unknown>({
      name: "probe",
      optionsSchema: {
        type: "object",
        properties: { tag: { [keyword]: [{ const: 0 }, { type: "string", pattern: "^v[0-9]+$" }] } },
      },
      create: () => ({ forOperation: () => undefined }),
    });
  for (const keyword of ["anyOf", "oneOf"]) {
    assert.throws(
      () => validateConfig({ policies: { probe: { tag: "latest" } } }, [option(keyword)]),
      { message: "invalid config: /policies/probe/tag must be 0 or a string matching ^v[0-9]+$" },
      keyword,
    );
  }
});

/** A port held on 127.0.0.1 until the test ends, chosen by the OS. */
async function busyPort(t: TestContext): Promise<number> {
  const holder = createServer();
  holder.listen(0, "127.0.0.1");
  await once(holder, "listening");
  t.after(() => holder.close());
  return (holder.address() as AddressInfo).port;
}

// Alone the process listens itself; with workers a worker listens through the primary (and Node
// words a busy port differently), while the primary listens on the ops port itself.
test("a host that does not resolve stops start-up with one line naming the address and its settings", async () => {
  for (const workers of ["1", "2"]) {
    const { code, stderr } = await startUp({ HOST: "999.1.1.1", PORT: "8080", WORKERS: workers });
    assert.equal(code, 1, `WORKERS=${workers}`);
    // The resolver's own word varies with the machine's DNS (none at all gives EAI_AGAIN).
    assert.match(
      stderr,
      /^petstore-gateway: cannot listen on 999\.1\.1\.1:8080 \(HOST \/ host, PORT \/ port\): getaddrinfo (ENOTFOUND|EAI_AGAIN|EAI_FAIL|EAI_NONAME) 999\.1\.1\.1\n$/,
      `WORKERS=${workers}`,
    );
  }
});

test("a busy public port stops start-up with one line naming the address and its settings", async (t) => {
  const port = await busyPort(t);
  // With workers too the primary listens on the public port itself (src/cluster/dispatch.ts): one line, the same.
  for (const workers of ["1", "2"]) {
    const { code, stderr } = await startUp({ HOST: "127.0.0.1", PORT: String(port), WORKERS: workers });
    assert.equal(code, 1, `WORKERS=${workers}`);
    assert.equal(
      stderr,
      `petstore-gateway: cannot listen on 127.0.0.1:${port} (HOST / host, PORT / port): listen EADDRINUSE: address already in use 127.0.0.1:${port}\n`,
      `WORKERS=${workers}`,
    );
  }
});

test("a busy ops port stops start-up with one line naming the address and its settings", async (t) => {
  const port = await busyPort(t);
  const dir = mkdtempSync(join(tmpdir(), "gw-config-"));
  const configFile = join(dir, "gateway.json");
  writeFileSync(configFile, JSON.stringify({ opsHost: "127.0.0.1" }));
  for (const workers of ["1", "2"]) {
    const { code, stderr } = await startUp({
      GATEWAY_CONFIG: configFile,
      OPS_PORT: String(port),
      WORKERS: workers,
    });
    assert.equal(code, 1, `WORKERS=${workers}`);
    assert.equal(
      stderr,
      `petstore-gateway: cannot listen on 127.0.0.1:${port} (OPS_HOST / opsHost, OPS_PORT / opsPort): listen EADDRINUSE: address already in use 127.0.0.1:${port}\n`,
      `WORKERS=${workers}`,
    );
  }
});

test("SIGTERM to npm start reaches the gateway itself, which stops gracefully", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-npm-"));
  const configFile = join(dir, "gateway.json");
  writeFileSync(configFile, JSON.stringify({ server: { shutdownDrainMs: 0 } }));
  // --ignore-scripts: only the start script, not the build before it (npm test built dist/ already,
  // and other tests are starting the program from it).
  const npm = spawn("npm", ["start", "--silent", "--ignore-scripts"], {
    cwd: PROJECT_ROOT,
    env: { ...childEnv(), PORT: "0", OPS_PORT: "0", GATEWAY_CONFIG: configFile },
    stdio: ["ignore", "pipe", "ignore"],
  });
  const lines: Record<string, unknown>[] = [];
  const listening = new Promise<Record<string, unknown>>((resolve) => {
    createInterface({ input: npm.stdout }).on("line", (text: string) => {
      const line = JSON.parse(text) as Record<string, unknown>;
      lines.push(line);
      if (line.msg === "gateway listening") resolve(line);
    });
  });
  const { pid } = (await listening) as { pid: number };
  try {
    npm.kill("SIGTERM");
    await once(npm, "exit");
    await eventually("the gateway process gone after npm's SIGTERM", () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
    assert.ok(
      lines.some((line) => line.msg === "stopped"),
      lines.map((line) => line.msg).join(", "),
    );
  } finally {
    try {
      process.kill(pid, "SIGKILL"); // an orphan must not outlive a failed test
    } catch {
      // gone, as it should be
    }
  }
});

test("a bad config file stops start-up with one line naming the bad field", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-config-"));
  const file = join(dir, "gateway.json");
  writeFileSync(file, JSON.stringify({ upstream: { timeoutMs: "soon" } }));
  const first = await startUp({ GATEWAY_CONFIG: file });
  assert.equal(first.code, 1);
  const lines = first.stderr.trim().split("\n");
  assert.equal(lines.length, 1, first.stderr);
  assert.match(lines[0] as string, /\/upstream\/timeoutMs must be integer/);

  writeFileSync(file, JSON.stringify({ upstrem: {} }));
  const second = await startUp({ GATEWAY_CONFIG: file });
  assert.equal(second.code, 1);
  assert.match(second.stderr, /\/upstrem is not a known setting/);
});

test("an explicit ENVIRONMENT with no upstream for it refuses to start instead of serving the demo", async () => {
  const { code, stderr } = await startUp({ ENVIRONMENT: "staging" });
  assert.equal(code, 1);
  assert.match(stderr, /ENVIRONMENT is staging but no upstream is known/);
});

test("outside the demo, start-up without a key file is refused", async () => {
  const { code, stderr } = await startUp({ UPSTREAM_URL: "http://127.0.0.1:9/v1" });
  assert.equal(code, 1);
  assert.match(stderr, /API_KEYS_FILE/);
});

test("a document the lifecycle cannot honour: the gateway program prints one line and exits", async () => {
  const document = JSON.parse(readFileSync(join(PROJECT_ROOT, "config/openapi.json"), "utf8"));
  document.paths["/pets/{petId}"].get["x-gateway-deprecation"].since = "2031-01-01T00:00:00Z";
  const file = join(mkdtempSync(join(tmpdir(), "gw-doc-")), "late-since-program.json");
  writeFileSync(file, JSON.stringify(document));
  const { file: keysFile } = writeKeysFile(["acme"]);
  const { code, stderr } = await startUp({
    OPENAPI_FILE: file,
    UPSTREAM_URL: "http://127.0.0.1:9/v1",
    API_KEYS_FILE: keysFile,
  });
  assert.equal(code, 1);
  assert.equal(stderr.trim().split("\n").length, 1, stderr);
  assert.match(
    stderr,
    /^petstore-gateway: OpenAPI description: operation getPet .* is later than its sunset/,
  );
});

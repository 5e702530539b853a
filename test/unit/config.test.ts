// Loading the gateway config (src/config.ts): a file plus environment variables, defaults filled
// in, every refusal naming the field (and the variable that set it), the result frozen.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import policies from "../../policies/index.ts";
import { configFileOf, loadConfig, settingName } from "../../src/config.ts";
import { DEFAULT_CONFIG_FILE, DEFAULT_OPENAPI_FILE } from "../../src/project-files.ts";

const folder = mkdtempSync(join(tmpdir(), "gw-config-"));
let files = 0;

/** A config file holding `text` as it is (JSON or not); its environment names it. */
function configFile(text: string): NodeJS.ProcessEnv {
  const file = join(folder, `gateway-${++files}.json`);
  writeFileSync(file, text);
  return { GATEWAY_CONFIG: file };
}

const load = (env: NodeJS.ProcessEnv, overrides?: Record<string, unknown>) =>
  loadConfig({ env, policies, ...(overrides ? { overrides } : {}) });

test("an empty file is a whole config: every field and every policy's options at their defaults", () => {
  const config = load(configFile("{}"));
  assert.equal(config.port, 8080);
  assert.equal(config.opsPort, 9090);
  assert.equal(config.openapi, DEFAULT_OPENAPI_FILE);
  assert.equal(config.log.level, "info");
  assert.equal(config.environment, undefined);
  assert.deepEqual(config.server.trustedProxies, []);
  assert.deepEqual(Object.keys(config.policies).sort(), policies.map((policy) => policy.name).sort());
  assert.equal((config.policies.responseContract as { mode: string }).mode, "report");
});

test("the config is frozen, to the last nested field", () => {
  const config = load(configFile('{"server":{"trustedProxies":["10.0.0.0/8"]}}'));
  assert.throws(() => {
    (config as { port: number }).port = 1;
  }, TypeError);
  assert.throws(() => {
    (config.server.trustedProxies as string[]).push("0.0.0.0/0");
  }, TypeError);
});

test("environment variables win over the file; numbers are numbers; an empty variable is unset", () => {
  const env = {
    ...configFile('{"port": 8000, "log": {"level": "warn"}}'),
    PORT: "9000",
    LOG_LEVEL: "",
    UPSTREAM_URL: "http://pets:3000/v1",
    API_KEYS_FILE: "/etc/gateway/keys.json",
    CONTRACT_MODE: "enforce",
  };
  const config = load(env);
  assert.equal(config.port, 9000);
  assert.equal(config.log.level, "warn");
  assert.equal(config.upstream.url, "http://pets:3000/v1");
  assert.equal((config.policies.auth as { keysFile: string }).keysFile, "/etc/gateway/keys.json");
  assert.equal((config.policies.responseContract as { mode: string }).mode, "enforce");
});

test("overrides come last, merged into the sections rather than replacing them", () => {
  const config = load(configFile('{"server": {"maxConnections": 5}}'), {
    server: { trustedProxies: ["10.0.0.1"] },
  });
  assert.equal(config.server.maxConnections, 5);
  assert.deepEqual(config.server.trustedProxies, ["10.0.0.1"]);
});

test("a bad field fails with its path in the file, or with the variable that set it", () => {
  const file = configFile('{"port": "eighty"}');
  assert.throws(() => load(file), {
    message: `invalid config: ${file.GATEWAY_CONFIG}: /port must be integer`,
  });
  assert.throws(() => load({ ...configFile("{}"), PORT: "70000" }), {
    message: "invalid config: PORT (/port) must be <= 65535",
  });
  assert.throws(() => load({ ...configFile("{}"), CONTRACT_MODE: "strict" }), {
    message:
      "invalid config: CONTRACT_MODE (/policies/responseContract/mode) must be one of enforce, report, off",
  });
  const nested = configFile('{"policies": {"lifecycle": {"maxTrackedCallers": 0}}}');
  assert.throws(() => load(nested), {
    message: `invalid config: ${nested.GATEWAY_CONFIG}: /policies/lifecycle/maxTrackedCallers must be >= 1`,
  });
});

test("a field the gateway does not know is refused by name, not ignored", () => {
  const file = configFile('{"prot": 8080}');
  assert.throws(() => load(file), {
    message: `invalid config: ${file.GATEWAY_CONFIG}: /prot is not a known setting`,
  });
  const policy = configFile('{"policies": {"auth": {"keyFile": "keys.json"}}}');
  assert.throws(() => load(policy), {
    message: `invalid config: ${policy.GATEWAY_CONFIG}: /policies/auth/keyFile is not a known setting`,
  });
});

test("a trusted proxy must be an address or a range", () => {
  const file = configFile('{"server": {"trustedProxies": ["10.0.0.0/33"]}}');
  assert.throws(() => load(file), { message: /\/server\/trustedProxies\/0/ });
});

test("rules between fields: the ops port is never the public port, the head's timeout fits the request's", () => {
  assert.throws(() => load(configFile('{"port": 8000, "opsPort": 8000}')), {
    message: /\/opsPort must differ from .*\/port \(8000\)/,
  });
  assert.throws(
    () => load(configFile('{"server": {"headersTimeoutMs": 20000, "requestTimeoutMs": 10000}}')),
    {
      message: /\/server\/headersTimeoutMs must not be above \/server\/requestTimeoutMs/,
    },
  );
});

test("a file that is not a JSON object says so, naming the file", () => {
  const broken = configFile('{"port": 80');
  assert.throws(() => load(broken), { message: new RegExp(`^config ${broken.GATEWAY_CONFIG}: `) });
  const list = configFile("[]");
  assert.throws(() => load(list), { message: `config ${list.GATEWAY_CONFIG}: must be a JSON object` });
  const missing = { GATEWAY_CONFIG: join(folder, "absent.json") };
  assert.throws(() => load(missing), { message: new RegExp(`^config ${missing.GATEWAY_CONFIG}: `) });
});

test("the file is GATEWAY_CONFIG's, else config/gateway.json; a setting is named by its variable and field", () => {
  assert.equal(configFileOf({}), DEFAULT_CONFIG_FILE);
  assert.equal(configFileOf({ GATEWAY_CONFIG: "/etc/gw.json" }), "/etc/gw.json");
  assert.equal(settingName("/upstream/url"), "UPSTREAM_URL / upstream.url");
  assert.equal(settingName("/server/maxConnections"), "server.maxConnections");
});

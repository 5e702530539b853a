// Environment variables are text; the setting each one sets decides whether it is read as a number.
import assert from "node:assert/strict";
import { test } from "node:test";
import policies from "../../policies/index.ts";
import { loadConfig } from "../../src/config.ts";

test("a file name made of digits stays a file name: API_KEYS_FILE=2024", () => {
  const config = loadConfig({ policies, env: { API_KEYS_FILE: "2024" } });
  assert.equal((config.policies.auth as { keysFile: unknown }).keysFile, "2024");
});

test("a numeric setting given as text is a number: PORT, OPS_PORT and WORKERS", () => {
  const config = loadConfig({ policies, env: { PORT: "8081", OPS_PORT: "9091", WORKERS: "2" } });
  assert.deepEqual([config.port, config.opsPort, config.workers], [8081, 9091, 2]);
});

test("a numeric setting given words is refused with the variable's name, not read as text", () => {
  assert.throws(() => loadConfig({ policies, env: { PORT: "eighty" } }), /PORT/);
});

test("OPS_HOST binds the ops port where the config file would: the variable names the setting", () => {
  const config = loadConfig({ policies, env: { OPS_HOST: "127.0.0.1" } });
  assert.equal(config.opsHost, "127.0.0.1");
});

test("OPS_TOKEN_FILE is a file name, digits or not, and no token is asked for without it", () => {
  assert.equal(loadConfig({ policies, env: {} }).opsTokenFile, undefined);
  assert.equal(loadConfig({ policies, env: { OPS_TOKEN_FILE: "2024" } }).opsTokenFile, "2024");
});

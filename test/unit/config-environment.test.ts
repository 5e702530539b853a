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

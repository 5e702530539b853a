import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { test } from "node:test";
import { PROJECT_ROOT } from "../../src/config.ts";
import {
  ApiDescriptionError,
  ConfigError,
  ListenError,
  STARTUP_ERROR_CODES,
  StartupError,
} from "../../src/startup-errors.ts";

// Written out, not read from the module: a renamed code must fail here, since programs match on it.
const EXPECTED = [
  [ConfigError, "GATEWAY_CONFIG_INVALID"],
  [ApiDescriptionError, "GATEWAY_API_DESCRIPTION_INVALID"],
  [ListenError, "GATEWAY_LISTEN_FAILED"],
] as const;

test("each start-up failure keeps its own code, and is a StartupError that main prints as one line", () => {
  for (const [ErrorClass, code] of EXPECTED) {
    const error = new ErrorClass("the message");
    assert.ok(error instanceof StartupError, ErrorClass.name);
    assert.equal(error.code, code);
    assert.equal(error.message, "the message");
    assert.equal(error.name, ErrorClass.name);
  }
  const codes = EXPECTED.map(([, code]) => code);
  assert.equal(new Set(codes).size, codes.length, "two failures share a code");
  assert.deepEqual(Object.keys(STARTUP_ERROR_CODES).sort(), [...codes].sort());
});

test("the configuration guide lists every start-up code with its meaning, and no other", () => {
  const guide = readFileSync(resolve(PROJECT_ROOT, "docs/configuration.md"), "utf8");
  const rows = [...guide.matchAll(/^\| `(GATEWAY_[A-Z_]+)` +\| ([^|]+?) +\|$/gm)].map(([, code, meaning]) => [
    code,
    meaning,
  ]);
  assert.deepEqual(Object.fromEntries(rows), STARTUP_ERROR_CODES);
});

import assert from "node:assert/strict";
import { test } from "node:test";
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

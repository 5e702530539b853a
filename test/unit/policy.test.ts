import assert from "node:assert/strict";
import { test } from "node:test";
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import { definePolicy } from "../../src/policy.ts";

interface ProbeOptions {
  readonly mode: "on" | "off";
  readonly label: string | undefined;
}

test("a policy's options schema must match its Options type, or it does not compile", () => {
  const create = () => ({ forOperation: () => undefined });
  const typed = definePolicy<ProbeOptions>({
    name: "probe",
    optionsSchema: {
      type: "object",
      additionalProperties: false,
      required: [],
      properties: {
        mode: { type: "string", enum: ["on", "off"], default: "off" },
        label: { type: "string", nullable: true },
      },
    },
    create,
  });
  definePolicy<ProbeOptions>({
    name: "drifted",
    // @ts-expect-error: the type says label is a string, the schema an integer
    optionsSchema: {
      type: "object",
      additionalProperties: false,
      required: [],
      properties: {
        mode: { type: "string", enum: ["on", "off"], default: "off" },
        label: { type: "integer", nullable: true },
      },
    },
    create,
  });
  definePolicy<ProbeOptions>({
    name: "forgotten",
    // @ts-expect-error: label is an option of the type, missing from the schema
    optionsSchema: {
      type: "object",
      additionalProperties: false,
      required: [],
      properties: { mode: { type: "string", enum: ["on", "off"], default: "off" } },
    },
    create,
  });
  const config = validateConfig({}, [typed]);
  assert.deepEqual(config.policies.probe, { mode: "off" });
});

test("an optional option is left out or given, never null, though its schema says nullable", () => {
  assert.throws(() => validateConfig({ policies: { auth: { keysFile: null } } }, policies), {
    message: "invalid config: /policies/auth/keysFile must be string",
  });
  const config = validateConfig({ policies: { auth: { keysFile: "keys.json" } } }, policies);
  assert.equal((config.policies.auth as { keysFile: string }).keysFile, "keys.json");
});

test("an option of a few values says which, whatever type of value the config gave", () => {
  assert.throws(() => validateConfig({ policies: { responseContract: { mode: 3 } } }, policies), {
    message: "invalid config: /policies/responseContract/mode must be one of enforce, report, off",
  });
});

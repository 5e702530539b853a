import assert from "node:assert/strict";
import { test } from "node:test";
import { validateConfig } from "../../src/config.ts";
import { createGateway } from "../../src/gateway.ts";
import { createLogger } from "../../src/logger.ts";
import { definePolicy } from "../../src/policy.ts";
import { LogCapture } from "../support/gateway.ts";

function reloading(name: string, reload: (why: string) => void | Promise<void>) {
  return definePolicy<Record<string, never>>({
    name,
    optionsSchema: { type: "object", additionalProperties: false, required: [], default: {} },
    create: () => ({ forOperation: () => undefined, reload }),
  });
}

test("reload() asks every policy, and one that fails is logged while the others still reload", async () => {
  const asked: string[] = [];
  const policies = [
    reloading("broken", () => Promise.reject(new Error("cannot read it"))),
    reloading("keys", (why) => {
      asked.push(why);
    }),
  ];
  const logs = new LogCapture();
  const gateway = createGateway({
    config: validateConfig({}, policies),
    policies,
    upstreamUrl: "http://127.0.0.1:9/v1",
    environment: "production",
    logger: createLogger("info", logs).logger,
  });
  try {
    await gateway.reload("SIGHUP");
    assert.deepEqual(asked, ["SIGHUP"]);
    const failed = logs.messages("policy failed");
    assert.equal(failed.length, 1);
    assert.equal(failed[0]?.policy, "broken");
    assert.equal(failed[0]?.phase, "reload");
  } finally {
    await gateway.close();
  }
});

// The complete small policy docs/writing-a-policy.md shows: it runs as written, and the page
// shows it as the fixture holds it (so the page's code never drifts from code that passes).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import agentBlock from "../fixtures/example-policy/index.ts";
import { policyHarness } from "../support/policy-harness.ts";
import { PROJECT_ROOT } from "../support/program.ts";

const gateway = policyHarness(agentBlock, { agents: ["BadBot/1.0"] });

test("the example policy: a listed user agent gets 403 AGENT_BLOCKED and never reaches the backend", async () => {
  const trial = await gateway.request({ path: "/v1/pets", headers: { "user-agent": "BadBot/1.0" } });
  assert.equal(trial.reply?.status, 403);
  assert.equal(trial.reply?.error?.code, "AGENT_BLOCKED");
  assert.equal(trial.forwarded, undefined);
});

test("the example policy: any other user agent goes on to the backend", async () => {
  const trial = await gateway.request({ path: "/v1/pets", headers: { "user-agent": "curl/8" } });
  assert.equal(trial.reply, undefined);
  assert.equal(trial.forwarded?.url, "/pets");
});

test("docs/writing-a-policy.md shows the example policy as it is, from policies/agent-block/", () => {
  const page = readFileSync(join(PROJECT_ROOT, "docs/writing-a-policy.md"), "utf8");
  const shown = /`policies\/agent-block\/index\.ts`:\n\n```ts\n([\s\S]*?)```\n/.exec(page)?.[1];
  assert.ok(shown, "the page shows policies/agent-block/index.ts");
  const fixture = readFileSync(join(PROJECT_ROOT, "test/fixtures/example-policy/index.ts"), "utf8");
  assert.equal(shown, fixture.replaceAll('"../../../src/', '"../../src/'));
});

// The keys the CLI prints open a real gateway, a rotation overlaps, a revoke is honoured without a
// restart; and the example key file opens nothing. The CLI's own behaviour on its file (modes,
// symlinks, concurrent edits, listing) runs in test:slow (test/slow/keys-cli), its npm script and
// bad arguments too (test/slow/keys-command): its processes cost more CPU than npm test can spare.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { eventually } from "./support/eventually.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { sha256 } from "./support/keys.ts";
import { add, entries, keys } from "./support/keys-command.ts";
import { PROJECT_ROOT } from "./support/program.ts";

const directory = mkdtempSync(join(tmpdir(), "gw-keys-cli-"));
after(() => rmSync(directory, { recursive: true, force: true }));

describe("npm run keys", () => {
  test("keys from the CLI open a gateway; rotation with overlap; revoke is honoured without a restart", async (t) => {
    const file = join(directory, "live.json");
    const oldKey = await add(file, "acme");
    const gw = await startGateway(
      { config: { policies: { auth: { keysFile: file, reloadIntervalMs: 100 } } } },
      t,
    );
    const url = `${gw.url}/pets`;
    const status = async (key: string) => (await request(url, { key })).status;
    assert.equal(await status(oldKey), 200);

    const newKey = await add(file, "acme");
    await eventually("the second key of acme", async () => (await status(newKey)) === 200);
    assert.equal(await status(oldKey), 200, "both keys work during the overlap");

    const prefix = sha256(oldKey).slice(0, 8);
    const revoked = await keys(["revoke", "acme", "--digest", prefix, "--file", file]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stderr, /Revoked 1 key of acme/);
    const changed = performance.now();
    await eventually("the old key refused", async () => (await status(oldKey)) === 401);
    t.diagnostic(`revoked key refused ${Math.round(performance.now() - changed)} ms after the CLI exited`);
    assert.equal(await status(newKey), 200);

    assert.equal((await keys(["revoke", "acme", "--file", file])).code, 0);
    await eventually("every key of acme refused", async () => (await status(newKey)) === 401);
    assert.deepEqual(entries(file), []);
    const expired = await add(file, "late", "--not-after", "2001-02-03T04:05:06Z");
    await eventually(
      "the reload down to one key",
      async () => gw.logs.messages("api keys reloaded").at(-1)?.keys === 1,
    );
    const answer = await request(url, { key: expired });
    assert.equal(answer.status, 401, "a key past its --not-after");
    assert.equal(answer.headers["www-authenticate"], 'Bearer error="invalid_token"');
  });
});

describe("the example key file", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      upstreamUrl: "http://127.0.0.1:9/v1",
      config: { policies: { auth: { keysFile: join(PROJECT_ROOT, "config/api-keys.example.json") } } },
    });
  });
  after(() => gw.close());

  test("is a valid key file whose digests open nothing", async () => {
    const file = JSON.parse(readFileSync(join(PROJECT_ROOT, "config/api-keys.example.json"), "utf8")) as {
      keys: { sha256: string }[];
    };
    for (const { sha256: digest } of file.keys) {
      assert.equal((await request(`${gw.url}/pets`, { key: digest })).status, 401);
    }
  });
});

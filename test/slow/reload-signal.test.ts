// SIGHUP, as an operator sends it: to the gateway alone, or to a cluster primary, which passes it
// on to every worker. The key file is replaced, and the new key works before the file's own
// polling (set to its longest, 4 s) could have noticed.
import assert from "node:assert/strict";
import { mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { eventually } from "../support/eventually.ts";
import { startGatewayProgram } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { type BackendProcess, type GatewayProcess, startDemoBackendProcess } from "../support/processes.ts";

const directory = mkdtempSync(join(tmpdir(), "petstore-reload-"));
let backend: BackendProcess;

before(async () => {
  backend = await startDemoBackendProcess();
});
after(async () => {
  await backend.close();
  rmSync(directory, { recursive: true, force: true });
});

for (const workers of [1, 2]) {
  describe(`SIGHUP with WORKERS=${workers}`, () => {
    let gateway: GatewayProcess | undefined;
    after(async () => {
      await gateway?.stop();
    });

    test("reloads the key file in every serving process at once", async () => {
      const own = join(directory, `workers-${workers}`);
      const first = writeKeysFile(["old"]);
      const next = writeKeysFile(["fresh"]);
      const keysFile = `${own}.keys.json`;
      renameSync(first.file, keysFile);
      gateway = await startGatewayProgram({
        upstreamUrl: backend.url,
        config: { policies: { auth: { reloadIntervalMs: 4000 } } },
        env: { API_KEYS_FILE: keysFile, WORKERS: String(workers) },
      });
      const url = `${gateway.origin}/v1/pets`;
      // Every worker up, so that each has a file to read again (a later one would read the new file anyway).
      const listening = () =>
        (gateway as GatewayProcess).lines.filter((line) => line.msg === "worker listening");
      // Starting workers takes seconds on a busy machine: a loose bound, only against a hang.
      if (workers > 1)
        await eventually("every worker listening", () => listening().length === workers, 20_000);
      assert.equal((await request(url, { key: first.key })).status, 200);

      renameSync(next.file, keysFile);
      const askedAt = performance.now();
      gateway.child.kill("SIGHUP");
      const sighupReloads = () =>
        (gateway as GatewayProcess).lines.filter(
          (line) => line.msg === "api keys reloaded" && line.why === "SIGHUP",
        );
      await eventually("a reload in every serving process", () => sighupReloads().length >= workers, 3000);
      assert.equal(sighupReloads().length, workers, "one reload per serving process");
      assert.ok(performance.now() - askedAt < 3500, "before the 4 s polling could have seen the file");
      // Every worker now refuses the old key and takes the new one (fresh connections spread over workers).
      for (let i = 0; i < 4 * workers; i++) {
        assert.equal((await request(url, { key: next.key })).status, 200);
        assert.equal((await request(url, { key: first.key })).status, 401);
      }
      assert.equal(await gateway.stop(), 0, "and the process is still whole: a clean stop");
    });
  });
}

// The key file's store while a read of it hangs in the kernel (a hung NFS or FUSE mount, made on
// loopback by holding libuv's pool: test/support/stuck-reads.ts): one read in flight, logged and
// counted once it is slow, polls skipped meanwhile, and the file's next version taken once the
// read returns.
import assert from "node:assert/strict";
import { test } from "node:test";
import { pino } from "pino";
import { Counter, Gauge, Registry } from "prom-client";
import { openKeyStore } from "../../../../policies/auth/key-store.ts";
import { slowFileReads } from "../../../../src/trusted-file.ts";
import { eventually } from "../../../support/eventually.ts";
import { LogCapture } from "../../../support/gateway.ts";
import { sha256, writeKeysFile, writeKeysFileAt } from "../../../support/keys.ts";
import { stallThreadPool } from "../../../support/stuck-reads.ts";

function storeOf(keysFile: string, reloadIntervalMs: number) {
  const registry = new Registry();
  const logs = new LogCapture();
  const store = openKeyStore({
    keysFile,
    reloadIntervalMs,
    slowReadMs: 200,
    logger: pino({ level: "debug" }, logs),
    metrics: {
      keys: new Gauge({ name: "keys", help: "keys", registers: [registry] }),
      reloads: new Counter({
        name: "reloads",
        help: "reloads",
        labelNames: ["result"],
        registers: [registry],
      }),
    },
  });
  return { store, logs };
}

const STUCK = "api key file read still pending (a hung mount?); polls are skipped until it returns";

test("a stuck read of the key file is logged once, polls wait for it, and a revocation is taken once it returns", async () => {
  const file = writeKeysFile(["kept", "revoked"]);
  const { store, logs } = storeOf(file.file, 100);
  const pool = await stallThreadPool();
  try {
    writeKeysFileAt(file.file, [file.keys[0] as { consumer: string; key: string }]);
    const warning = await eventually("the stuck read logged", () => logs.messages(STUCK)[0]);
    assert.equal(warning.level, 40);
    assert.equal(warning.file, file.file);
    await eventually(
      "three polls skipped",
      () => logs.messages("api key file poll skipped: a read is still pending").length >= 3,
    );
    assert.equal(logs.messages(STUCK).length, 1, "one read in flight, one warning");
    assert.equal(slowFileReads(), 1);
    assert.ok(
      store.current().entries.has(sha256(file.keyOf("revoked"))),
      "the old keys are served meanwhile",
    );
  } finally {
    await pool.release();
  }
  await eventually("the revoked key gone", () => !store.current().entries.has(sha256(file.keyOf("revoked"))));
  assert.equal(slowFileReads(), 0);
  assert.ok(store.current().entries.has(sha256(file.keyOf("kept"))));
  await store.close();
});

test("reloads asked for during a stuck read make one more read when it returns, and close does not wait on it", async () => {
  const file = writeKeysFile(["one"]);
  const { store, logs } = storeOf(file.file, 4000);
  const pool = await stallThreadPool();
  let reloads: Promise<void>[] = [];
  try {
    reloads = [store.reload("SIGHUP"), store.reload("SIGHUP"), store.reload("SIGHUP")];
    await eventually("the stuck read logged", () => logs.messages(STUCK)[0]);
    const closing = performance.now();
    await store.close();
    assert.ok(performance.now() - closing < 1000, "closed without waiting for the read");
  } finally {
    await pool.release();
  }
  await Promise.all(reloads);
  assert.equal(logs.messages("api keys reloaded").length, 2, "the first read and one more");
});

// A command's output file is replaced whole by a rename, never written over: what a reader holds
// stays whole, and a write that fails leaves the old file and no temporary one.
import assert from "node:assert/strict";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { writeFileAtomically } from "../../src/write-file-atomically.ts";

test("a file is replaced by a rename: a reader of the old one reads it to its end, and its mode stays", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-atomic-"));
  const file = join(dir, "page.html");
  const old = `old page\n${"x".repeat(100_000)}\n`;
  writeFileSync(file, old);
  chmodSync(file, 0o600);
  const reader = openSync(file, "r");
  await writeFileAtomically(file, "new page\n");
  assert.equal(readFileSync(file, "utf8"), "new page\n");
  assert.equal(statSync(file).mode & 0o777, 0o600);
  // The old file was never written over: a mail client attaching it meanwhile got all of it.
  const held = Buffer.alloc(old.length + 1);
  assert.equal(readSync(reader, held, 0, held.length, 0), old.length);
  assert.equal(held.subarray(0, old.length).toString(), old);
  assert.deepEqual(readdirSync(dir), ["page.html"], "a temporary file was left behind");
});

test("a new file is created with the usual mode, and nothing else is left beside it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-atomic-"));
  await writeFileAtomically(join(dir, "callers.csv"), "a,b\r\n");
  assert.equal(readFileSync(join(dir, "callers.csv"), "utf8"), "a,b\r\n");
  assert.equal(statSync(join(dir, "callers.csv")).mode & 0o777, 0o666 & ~process.umask());
  assert.deepEqual(readdirSync(dir), ["callers.csv"]);
});

test("a write that fails throws and leaves what was there, with no temporary file", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-atomic-"));
  // A directory where the file should go: the rename fails.
  const target = join(dir, "page.html");
  mkdirSync(target);
  await assert.rejects(writeFileAtomically(target, "page"), { code: "EISDIR" });
  assert.deepEqual(readdirSync(dir), ["page.html"]);
  assert.deepEqual(readdirSync(target), []);
  // A directory that does not exist: nothing is created.
  await assert.rejects(writeFileAtomically(join(dir, "missing", "page.html"), "page"), { code: "ENOENT" });
  assert.deepEqual(readdirSync(dir), ["page.html"]);
});

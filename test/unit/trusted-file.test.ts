// What the gateway reads as a file it trusts (config, OpenAPI document, $refs, key file): a
// regular file, or a symbolic link to one, within a bound; a FIFO, a device or a directory is
// refused at once, naming the file, instead of blocking start-up or a reload for ever.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import {
  readTrustedFile,
  readTrustedFileSync,
  slowFileReads,
  TrustedFileError,
} from "../../src/trusted-file.ts";
import { eventually } from "../support/eventually.ts";
import { makeFifo, stallThreadPool } from "../support/stuck-reads.ts";

const folder = mkdtempSync(join(tmpdir(), "gw-trusted-file-"));
after(() => rmSync(folder, { recursive: true, force: true }));

const regular = join(folder, "regular.json");
writeFileSync(regular, '{"a": 1}');
const fifo = join(folder, "fifo");
makeFifo(fifo);
const bound = { maxBytes: 1024 };
const async = { ...bound, slowAfterMs: 5000 };

/** Both readers' refusal of `file`: the same message, given at once. */
async function refusals(file: string): Promise<string> {
  const started = performance.now();
  assert.throws(() => readTrustedFileSync(file, bound), TrustedFileError);
  let message = "";
  await assert.rejects(readTrustedFile(file, async), (error) => {
    assert.ok(error instanceof TrustedFileError);
    message = error.message;
    return true;
  });
  assert.ok(performance.now() - started < 1000, "refused at once");
  assert.throws(() => readTrustedFileSync(file, bound), { message });
  return message;
}

test("a FIFO nobody writes is refused at once, naming it, instead of blocking the read for ever", async () => {
  assert.equal(
    await refusals(fifo),
    `${fifo} is a FIFO (named pipe), not a regular file: the gateway reads only regular files, which cannot block it`,
  );
});

test("a directory and a device are refused, saying what they are", async () => {
  assert.match(await refusals(folder), /^\/.* is a directory, not a regular file/);
  assert.match(await refusals("/dev/zero"), /^\/dev\/zero is a character device, not a regular file/);
});

test("a symbolic link to a regular file is read (a Kubernetes Secret is one); to a FIFO, refused", async () => {
  const link = join(folder, "link.json");
  symlinkSync(regular, link);
  assert.equal(readTrustedFileSync(link, bound).text, '{"a": 1}');
  assert.equal((await readTrustedFile(link, async)).text, '{"a": 1}');
  const toFifo = join(folder, "link-to-fifo");
  symlinkSync(fifo, toFifo);
  assert.match(await refusals(toFifo), /link-to-fifo is a FIFO/);
});

test("a file over the bound is refused before it is read, by the name the caller gives it", async () => {
  const large = join(folder, "large.json");
  writeFileSync(large, "x".repeat(2 * 1024 * 1024 + 1));
  const options = { maxBytes: 2 * 1024 * 1024, name: "the file" };
  assert.throws(() => readTrustedFileSync(large, options), {
    message: "the file is larger than 2 MB (2097153 bytes): it is refused before it is parsed",
  });
  await assert.rejects(readTrustedFile(large, { ...options, slowAfterMs: 5000 }), TrustedFileError);
});

test("an unchanged file is not read again when the caller's fstat check declines it", async () => {
  const seen = await readTrustedFile(regular, async);
  const again = await readTrustedFile(regular, { ...async, wanted: (stats) => stats.ino !== seen.stats.ino });
  assert.equal(again.text, undefined);
  assert.equal(again.stats.ino, seen.stats.ino);
});

test("a read stuck in the kernel is counted and reported once it is slow, and uncounted when it returns", async () => {
  const pool = await stallThreadPool();
  let released = false;
  try {
    const reports: number[] = [];
    const read = readTrustedFile(regular, { ...bound, slowAfterMs: 100, onSlow: (ms) => reports.push(ms) });
    await eventually("the read reported slow", () => reports.length === 1);
    // At the slowAfterMs timer, give or take the clocks' millisecond rounding.
    assert.ok((reports[0] as number) >= 99, `reported after ${reports[0]} ms`);
    assert.equal(slowFileReads(), 1);
    await pool.release();
    released = true;
    assert.equal((await read).text, '{"a": 1}');
    assert.equal(slowFileReads(), 0);
    assert.equal(reports.length, 1, "reported once");
  } finally {
    if (!released) await pool.release();
  }
});

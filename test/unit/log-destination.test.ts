// stdout's destination measures each log line once (src/log-destination.ts), and still buffers
// and writes exactly what SonicBoom's own write does: the same buffers of at most maxWrite bytes,
// the same file.
import assert from "node:assert/strict";
import fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mock, test } from "node:test";
import pino from "pino";
import { measureLinesOnce } from "../../src/log-destination.ts";

const lines = Array.from(
  { length: 400 },
  (_, i) =>
    // Mixed sizes, and characters of two and three bytes, so that chars and bytes differ.
    `{"n":${i},"path":"/v1/pets/${"é".repeat(i % 37)}${"漢".repeat(i % 11)}","pad":"${"x".repeat((i * 97) % 300)}"}\n`,
);

interface Destination {
  write(line: string): boolean;
  flushSync(): void;
  end(): void;
}

/** The sizes of the writes a destination made for the lines, and the file it wrote. */
function writeAll(file: string, patch: boolean): { sizes: number[]; text: string } {
  // Synchronous, so that each write happens when SonicBoom decides it, not when a callback lands.
  const destination = pino.destination({
    dest: file,
    sync: true,
    minLength: 4000,
    maxWrite: 4096,
  }) as unknown as Destination;
  if (patch)
    assert.equal(
      measureLinesOnce(destination),
      true,
      "the installed SonicBoom has the fields the patch reads",
    );
  const sizes: number[] = [];
  const original = fs.writeSync;
  const writeSync = mock.method(fs, "writeSync", (...args: Parameters<typeof fs.writeSync>) => {
    sizes.push(Buffer.byteLength(args[1] as string));
    return (original as (...a: unknown[]) => number)(...args);
  });
  try {
    for (const line of lines) destination.write(line);
    destination.flushSync();
  } finally {
    writeSync.mock.restore();
  }
  destination.end();
  return { sizes, text: fs.readFileSync(file, "utf8") };
}

test("the patched destination writes the same lines in the same writes as SonicBoom's own", () => {
  const dir = fs.mkdtempSync(join(tmpdir(), "log-destination-"));
  try {
    const own = writeAll(join(dir, "own.log"), false);
    const patched = writeAll(join(dir, "patched.log"), true);
    assert.ok(own.sizes.length > 10, `the lines took many writes (${own.sizes.length})`);
    assert.deepEqual(patched.sizes, own.sizes);
    for (const size of patched.sizes) assert.ok(size <= 4096, `a write of ${size} bytes`);
    assert.equal(patched.text, lines.join(""));
    assert.equal(own.text, lines.join(""));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a destination without SonicBoom's fields keeps its own write", () => {
  const write = () => true;
  const stream = { write };
  assert.equal(measureLinesOnce(stream), false);
  assert.equal(stream.write, write);
});

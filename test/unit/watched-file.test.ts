// A watched file replaced the way careful writers replace it (a new file renamed over the old
// one): each version is read at most once, whenever the poll lands. A poll that opened the old
// file an instant before the rename and looked at it an instant after used to see it changed
// (unlinked, its ctime moves) and read it again: the broken version it had already reported was
// reported twice, and a revoked key file's old text read once more.
import assert from "node:assert/strict";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { watchFile } from "../../src/watched-file.ts";

test("a file replaced by rename again and again: no version is read twice", async () => {
  const directory = mkdtempSync(join(tmpdir(), "watched-file-"));
  const file = join(directory, "watched.json");
  writeFileSync(file, "version 0");
  const reads = new Map<string, number>();
  const seen = (text: string) => reads.set(text, (reads.get(text) ?? 0) + 1);
  const watched = watchFile({
    file,
    maxBytes: 1024,
    // As often as a poll can come: the race is an open before a rename and an fstat after it.
    intervalMs: 1,
    parse: (text) => {
      seen(text);
      return text;
    },
    onLoaded: () => {},
    onFailed: () => {},
    onSlow: () => {},
  });
  try {
    for (let version = 1; version <= 400; version++) {
      const temporary = `${file}.tmp`;
      writeFileSync(temporary, `version ${version}`);
      renameSync(temporary, file);
      // Each version stays long enough to be read, and is then replaced while polls keep coming.
      const text = `version ${version}`;
      const until = performance.now() + 200;
      while (!reads.has(text) && performance.now() < until) await sleep(1);
      assert.ok(reads.has(text), `${text} was never read`);
    }
  } finally {
    await watched.close();
    rmSync(directory, { recursive: true, force: true });
  }
  const twice = [...reads].filter(([, count]) => count > 1).map(([text, count]) => `${text}: ${count} reads`);
  assert.deepEqual(twice, []);
});

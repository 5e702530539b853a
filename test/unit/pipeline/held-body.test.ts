// A held answer: read as text whatever its chunks, and its memory given back on the spot, not at
// V8's next full collection.
import assert from "node:assert/strict";
import { test } from "node:test";
import { freeBufferMemory } from "../../../src/pipeline/buffer-memory.ts";
import { HeldBody } from "../../../src/pipeline/held-body.ts";

const MB = 1024 * 1024;

test("a held body reads as the text it was, even with a character split between chunks", () => {
  const whole = Buffer.from(JSON.stringify({ name: "Rex é 犬 🐕" }));
  for (let cut = 1; cut < whole.length; cut++) {
    const held = new HeldBody([whole.subarray(0, cut), whole.subarray(cut)], whole.length);
    assert.equal(held.text(), whole.toString("utf8"), `cut at ${cut}`);
  }
  assert.equal(new HeldBody([whole], whole.length).text(), whole.toString("utf8"));
});

test("joined, a held body is one Buffer of the same bytes", () => {
  const chunks = [Buffer.from("[1,"), Buffer.from("2,"), Buffer.from("3]")];
  assert.equal(new HeldBody(chunks.slice(), 7).join().toString(), "[1,2,3]");
});

test("freeing a Buffer gives its memory back at once, without a garbage collection", () => {
  const before = process.memoryUsage().arrayBuffers;
  const answer = Buffer.allocUnsafeSlow(16 * MB);
  answer.fill(1);
  assert.ok(process.memoryUsage().arrayBuffers - before >= 16 * MB);
  freeBufferMemory(answer);
  assert.ok(process.memoryUsage().arrayBuffers - before < MB, "16 MB still allocated");
  assert.equal(answer.length, 0, "the freed Buffer reads as empty");
  freeBufferMemory(answer);
});

test("a Buffer that shares its memory is left alone: its neighbours stay readable", () => {
  const pooled = Buffer.from("small");
  const neighbour = Buffer.from("next");
  freeBufferMemory(pooled);
  assert.equal(pooled.toString(), "small");
  assert.equal(neighbour.toString(), "next");
  const whole = Buffer.alloc(64 * 1024, 7);
  const slice = whole.subarray(10, 20);
  freeBufferMemory(slice);
  assert.equal(whole[30], 7);
});

test("a held body freed once sent holds nothing more", () => {
  const chunks = [Buffer.allocUnsafeSlow(4 * MB).fill(1), Buffer.allocUnsafeSlow(4 * MB).fill(2)];
  const before = process.memoryUsage().arrayBuffers;
  new HeldBody(chunks, 8 * MB).free();
  assert.ok(before - process.memoryUsage().arrayBuffers >= 8 * MB - 1024);
});

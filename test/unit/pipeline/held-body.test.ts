// A held answer: read as text whatever its chunks, and its memory given back on the spot, not at
// V8's next full collection.
import assert from "node:assert/strict";
import { once } from "node:events";
import http, { type ServerResponse } from "node:http";
import net, { type AddressInfo } from "node:net";
import { test } from "node:test";
import { createAnswerBudget } from "../../../src/pipeline/answer-budget.ts";
import { freeBufferMemory } from "../../../src/pipeline/buffer-memory.ts";
import { type CoreExchange, newExchange } from "../../../src/pipeline/exchange.ts";
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

test("an empty Buffer is never detached: undici hands out its one shared empty Buffer as a body piece and parses it again", () => {
  const shared = Buffer.alloc(0);
  freeBufferMemory(shared);
  assert.equal(shared.buffer.detached, false);
  new Uint8Array(8).set(shared);
});

test("a held body freed once sent holds nothing more", () => {
  const chunks = [Buffer.allocUnsafeSlow(4 * MB).fill(1), Buffer.allocUnsafeSlow(4 * MB).fill(2)];
  const before = process.memoryUsage().arrayBuffers;
  new HeldBody(chunks, 8 * MB).free();
  assert.ok(before - process.memoryUsage().arrayBuffers >= 8 * MB - 1024);
});

test("over loopback HTTP, an answer read to its end is freed when it closes, one cut mid-body is not", async () => {
  // 2 x 8 MB: more than the loopback socket buffers take, so a client that stops reading leaves
  // a write pending when it goes.
  const CHUNK = 8 * MB;
  const budget = createAnswerBudget({
    maxBufferedBytes: 64 * MB,
    maxQueuedAnswerBytes: MB,
    maxResponseBodyBytes: 2 * CHUNK,
  });
  const answers: { chunks: Buffer[]; res: ServerResponse; exchange: CoreExchange }[] = [];
  const closed: Promise<unknown>[] = [];
  const server = http.createServer((req, res) => {
    const exchange = newExchange(req, res, `r${answers.length}`, "");
    const chunks = [1, 2].map((fill) => Buffer.allocUnsafeSlow(CHUNK).fill(fill));
    answers.push({ chunks, res, exchange });
    exchange.heldAnswer = new HeldBody(chunks.slice(), 2 * CHUNK);
    // What the pipeline does when a response closes (observe's answerClosed).
    closed.push(once(res, "close").then(() => budget.release(exchange)));
    res.writeHead(200, { "content-length": 2 * CHUNK });
    exchange.heldAnswer.endResponse(res);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  try {
    const whole = Buffer.from(await (await fetch(`http://127.0.0.1:${port}/`)).arrayBuffer());
    assert.equal(whole.length, 2 * CHUNK);
    assert.deepEqual([whole[0], whole[2 * CHUNK - 1]], [1, 2], "the bytes sent before they were freed");
    await closed[0];
    const sent = answers[0] as (typeof answers)[number];
    assert.equal(sent.res.writableFinished, true);
    assert.deepEqual(
      sent.chunks.map((chunk) => (chunk.buffer as ArrayBuffer).detached),
      [true, true],
      "every byte is with the kernel: freed",
    );
    // A client that reads a little and goes: a write of the answer may still be pending in libuv.
    const client = net.connect(port, "127.0.0.1");
    client.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    await once(client, "data");
    client.pause();
    await new Promise((wait) => setTimeout(wait, 50));
    client.destroy();
    await closed[1];
    const cut = answers[1] as (typeof answers)[number];
    assert.equal(cut.res.writableFinished, false);
    assert.deepEqual(
      cut.chunks.map((chunk) => (chunk.buffer as ArrayBuffer).detached),
      [false, false],
      "cut short: left to the collector",
    );
    assert.equal(cut.chunks[1]?.[CHUNK - 1], 2);
    assert.equal(cut.exchange.heldAnswer, undefined, "the exchange lets go of it either way");
  } finally {
    server.close();
  }
});

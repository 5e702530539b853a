import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LogLineReader, logEntry, MAX_LOG_LINE_BYTES, skippedLinesText } from "../../src/log-lines.ts";

test("a log line is read back with a collector's prefix, and only for its own message", () => {
  const line = JSON.stringify({ level: 30, msg: "deprecated call", operation: "getPet" });
  assert.deepEqual(logEntry(`2030-11-03T08:30:00Z stdout F ${line}`, "deprecated call"), JSON.parse(line));
  assert.equal(logEntry(line, "contract violation"), undefined, "another message");
  // The message's words elsewhere in the line are not the message.
  assert.equal(
    logEntry(JSON.stringify({ msg: "request", note: "deprecated call" }), "deprecated call"),
    undefined,
  );
  assert.equal(logEntry('{"msg":"deprecated call",', "deprecated call"), undefined, "a broken line");
  assert.equal(logEntry('"deprecated call"', "deprecated call"), undefined, "no object");
  assert.equal(logEntry('{"msg":"deprecated call"} [1', "deprecated call"), undefined, "trailing bytes");
});

/** Every line the reader gives of these chunks, and how many it skipped. */
async function read(chunks: readonly (string | Buffer)[], maxBytes = 16) {
  const reader = new LogLineReader(maxBytes);
  const lines: string[] = [];
  for await (const line of reader.lines(chunks)) lines.push(line);
  return { lines, skipped: reader.skipped };
}

describe("reading a log's lines, each within a bound", () => {
  test("lines end at a newline, CRLF too, and the last one may lack it", async () => {
    assert.deepEqual(await read(["one\ntwo\r\n", "\nthr", "ee"]), {
      lines: ["one", "two", "", "three"],
      skipped: 0,
    });
  });

  test("a line longer than the bound is skipped and counted, the lines around it read", async () => {
    const long = "x".repeat(40);
    assert.deepEqual(await read([`first\n${long.slice(0, 10)}`, long.slice(10), `\nlast\n`]), {
      lines: ["first", "last"],
      skipped: 1,
    });
    // One at the bound is read; one that never ends is skipped.
    assert.deepEqual(await read([`${"y".repeat(16)}\n`, "z".repeat(10), "z".repeat(10)]), {
      lines: ["y".repeat(16)],
      skipped: 1,
    });
  });

  test("a character split between two chunks reads as itself", async () => {
    const bytes = Buffer.from("née\n", "utf8");
    assert.deepEqual(await read([bytes.subarray(0, 2), bytes.subarray(2)]), { lines: ["née"], skipped: 0 });
  });

  test("the skipped lines are counted over every input a reader reads", async () => {
    const reader = new LogLineReader(4);
    for (const input of [["toolong\nok\n"], ["again too long"]]) for await (const _ of reader.lines(input));
    assert.equal(reader.skipped, 2);
    assert.equal(MAX_LOG_LINE_BYTES, 65_536);
    assert.equal(skippedLinesText(2), "2 lines longer than 64 KiB skipped");
  });
});

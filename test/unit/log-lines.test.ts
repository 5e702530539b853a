import assert from "node:assert/strict";
import { test } from "node:test";
import { logEntry } from "../../src/log-lines.ts";

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

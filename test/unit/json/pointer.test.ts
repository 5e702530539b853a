import assert from "node:assert/strict";
import { test } from "node:test";
import { clientPointerSegment, escapePointerToken, unescapePointerToken } from "../../../src/json/pointer.ts";

test("a member name with ~ and / survives the trip through a pointer token", () => {
  for (const name of ["a/b", "m~n", "~1", "/~0/", "plain", ""]) {
    assert.equal(unescapePointerToken(escapePointerToken(name)), name);
  }
  assert.equal(escapePointerToken("a/b~c"), "a~1b~0c");
});

test("a client's member name in a message is printable: control characters become ?", () => {
  assert.equal(clientPointerSegment("na\nme"), "/na?me");
  assert.equal(clientPointerSegment("a/b"), "/a~1b");
});

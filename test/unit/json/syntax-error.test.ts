import assert from "node:assert/strict";
import { test } from "node:test";
import { describeSyntaxError, parseJsonText } from "../../../src/json/syntax-error.ts";

test("a syntax error is named by the member it is in, its line and its column", () => {
  assert.equal(
    describeSyntaxError('{"name":"Rex",\n "categoryId": 07}', "body"),
    "/categoryId is not valid JSON (line 2, column 17)",
  );
  assert.equal(describeSyntaxError("[1, 2, oops]", "body"), "/2 is not valid JSON (line 1, column 8)");
});

test("a text that stops early says so, and a top-level error names the subject", () => {
  assert.equal(describeSyntaxError('{"name":', "body"), "/name is not valid JSON (it ends too early)");
  assert.equal(describeSyntaxError("nope", "body"), "body is not valid JSON (line 1, column 1)");
});

test("a file that is not JSON fails with one line that quotes none of its values", () => {
  const secret = "s3cr3t-value-that-must-not-print";
  assert.throws(
    () => parseJsonText(`{"keys": [\n  {"sha256": "${secret}"},\n]}`),
    (error: Error) => !error.message.includes(secret) && !error.message.includes("\n"),
  );
  assert.deepEqual(parseJsonText('{"a":[1]}'), { a: [1] });
});

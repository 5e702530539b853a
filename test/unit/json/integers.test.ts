import assert from "node:assert/strict";
import { test } from "node:test";
import { integerProblem, mayHoldUnsafeIntegers, parseWithExactIntegers } from "../../../src/json/integers.ts";

test("an integer beyond 2^53 is kept exact as a BigInt; smaller numbers stay numbers", () => {
  const text = '{"id":9007199254740993,"small":7,"ratio":0.5}';
  assert.equal(mayHoldUnsafeIntegers(text), true);
  assert.deepEqual(parseWithExactIntegers(text), { id: 9007199254740993n, small: 7, ratio: 0.5 });
  assert.equal(mayHoldUnsafeIntegers('{"id":7}'), false);
});

test("a text the exact parse cannot read gives undefined, not a throw", () => {
  assert.equal(parseWithExactIntegers("{"), undefined);
});

test("integral numbers must be int64 integer literals", () => {
  assert.equal(integerProblem("id", 7, "7"), undefined);
  assert.equal(integerProblem("id", 1, "1.0"), "/id must be written as an integer literal (got 1.0)");
  assert.equal(integerProblem("id", 2 ** 64, "18446744073709551616"), "/id must be within the int64 range");
  assert.equal(integerProblem("", 1000, "1e3"), "body must be written as an integer literal (got 1e3)");
  assert.equal(integerProblem("ratio", 0.5, "0.5"), undefined);
});

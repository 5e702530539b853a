import assert from "node:assert/strict";
import { test } from "node:test";
import { duplicateKey } from "../../../src/json/duplicate-keys.ts";

test("the first member name given twice is named by its pointer, however deep", () => {
  assert.equal(duplicateKey('{"a":1,"a":2}'), "/a");
  assert.equal(duplicateKey('{"list":[{"x":1},{"x":1,"x":2}]}'), "/list/1/x");
  assert.equal(duplicateKey('{"a\\u0062":1,"ab":2}'), "/ab");
});

test("the same name in different objects, or as a value, is no duplicate", () => {
  assert.equal(duplicateKey('{"a":{"a":1},"b":[{"a":1},{"a":2}],"c":"a"}'), undefined);
});

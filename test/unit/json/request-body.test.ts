import assert from "node:assert/strict";
import { test } from "node:test";
import { parseRequestJson } from "../../../src/json/request-body.ts";

test("a plain body parses to its value", () => {
  assert.deepEqual(parseRequestJson('{"name":"Rex","categoryId":7}', 32), {
    ok: true,
    value: { name: "Rex", categoryId: 7 },
  });
});

test("each refusal says what is wrong and where", () => {
  const refused = (text: string, maxDepth = 32) => {
    const result = parseRequestJson(text, maxDepth);
    return result.ok ? "accepted" : `${result.problem}: ${result.message}`;
  };
  assert.equal(refused("[[[1]]]", 2), "invalid: body nests deeper than 2 levels");
  assert.equal(refused('{"name":'), "malformed: /name is not valid JSON (it ends too early)");
  assert.equal(
    refused('{"categoryId":7.0}'),
    "invalid: /categoryId must be written as an integer literal (got 7.0)",
  );
  assert.equal(refused('{"name":"a","name":"b"}'), "invalid: /name is given more than once");
  assert.equal(refused('{"tags":{"__proto__":{}}}'), "invalid: /tags/__proto__ is a forbidden property name");
});

// Which response the document gives for a status: the response contract judges an answer by it,
// and the usage policy counts the answer under it, so both must read a document the same way.
import assert from "node:assert/strict";
import { test } from "node:test";
import { documentedResponseKey } from "../../../src/openapi/documented-response.ts";

const responsesOf = (...keys: string[]) => new Map(keys.map((key) => [key, {}]));

test("a status written on its own wins over its class, which wins over default", () => {
  const responses = responsesOf("404", "4XX", "default");
  assert.equal(documentedResponseKey(responses, 404), "404");
  assert.equal(documentedResponseKey(responses, 409), "4XX");
  assert.equal(documentedResponseKey(responses, 500), "default");
});

test("a class written in lower case is the same class", () => {
  assert.equal(documentedResponseKey(responsesOf("5xx"), 503), "5xx");
});

test("a status the document does not cover, and has no default for, falls under nothing", () => {
  assert.equal(documentedResponseKey(responsesOf("200", "4XX"), 302), undefined);
  assert.equal(documentedResponseKey(responsesOf(), 200), undefined);
});

// Excerpts of a backend's answer for log lines and the drift report: a key the backend echoed,
// as a string, a member name or a number, leaves no piece of itself.
import assert from "node:assert/strict";
import { hash } from "node:crypto";
import { test } from "node:test";
import { excerpt, jsonErrorExcerpt } from "../../../../policies/response-contract/excerpt.ts";
import type { Exchange } from "../../../../src/policy.ts";
import { redactKeys } from "../../../../src/redaction.ts";

const DIGIT_KEY = "15704415362032249873";
const LETTER_KEY = "bnzlgckqqpsgpckdknbzle";
const digests = new Set([DIGIT_KEY, LETTER_KEY].map((key) => hash("sha256", key, "hex")));
const exchange = {
  redact: (text: string) => redactKeys(text, [], (run) => digests.has(hash("sha256", run, "hex"))),
} as unknown as Exchange;

test("a key echoed as a string value or a member name is shown as [redacted]", () => {
  assert.equal(excerpt({ id: 1, name: LETTER_KEY }, "", exchange), '{"id":1,"name":"[redacted]"}');
  assert.equal(excerpt({ [LETTER_KEY]: 1 }, "", exchange), '{"[redacted]":1}');
});

test("a number beyond 2^53 is shown exactly when it was read exactly, and never by a double's digits", () => {
  // Read exactly (as the contract reads int64 fields): recognised as the key it is.
  assert.equal(excerpt(BigInt(DIGIT_KEY), "id", exchange), "[redacted]");
  assert.equal(excerpt(9007199254740993n, "id", exchange), "9007199254740993");
  // Read as a double: its digits are not the backend's, so a key in them could not be recognised.
  assert.equal(excerpt(Number(DIGIT_KEY), "name", exchange), "[redacted]");
  assert.equal(excerpt(2 ** 53 + 2, "name", exchange), "[redacted]");
  assert.equal(excerpt(1.5, "name", exchange), "1.5");
  assert.equal(excerpt(123456789, "name", exchange), "123456789");
});

test("the window around a JSON syntax error grows to whole runs, so an escaped key is redacted whole", () => {
  const escaped = [...LETTER_KEY].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
  const body = `{"id":1,"name":"${escaped}",}`;
  const shown = jsonErrorExcerpt(body, `Unexpected token at position ${body.length - 2}`, exchange);
  assert.ok(shown.includes("[redacted]"), shown);
  assert.ok(!shown.includes("\\u0062\\u006e"), shown);
});

// Which client request ids the gateway keeps, as pure functions of the request's headers.
import assert from "node:assert/strict";
import { test } from "node:test";
import { clientRequestId, isCredentialAsId, isOwnCredential } from "../../../src/pipeline/request-id.ts";

test("a well-formed X-Request-Id is kept as sent", () => {
  for (const id of ["abc", "trace-1.2:3@host/x+y=z", "a".repeat(128)]) {
    assert.equal(clientRequestId({ "x-request-id": id }), id);
  }
});

test("a missing, repeated, empty, too long or oddly written X-Request-Id is not kept", () => {
  for (const id of [undefined, "", "a".repeat(129), "has space", "new\nline", 'quote"', "ünï", "a,b"]) {
    assert.equal(clientRequestId(id === undefined ? {} : { "x-request-id": id }), undefined, String(id));
  }
  assert.equal(clientRequestId({ "x-request-id": ["a", "b"] as unknown as string }), undefined);
});

test("an id that repeats the request's key, a long part of it, or holds it is a credential", () => {
  const authorization = "Bearer k-0123456789abcdef";
  assert.equal(isOwnCredential("k-0123456789abcdef", authorization), true);
  assert.equal(isOwnCredential("0123456789", authorization), true);
  assert.equal(isOwnCredential("k-0123456789abcdef-retry-2", authorization), true);
  // Parts shorter than eight characters (the scheme, a stub) are too common to mean the key.
  assert.equal(isOwnCredential("Bearer", authorization), false);
  assert.equal(isOwnCredential("trace-42", authorization), false);
  assert.equal(isOwnCredential("k-012", authorization), false);
  assert.equal(isOwnCredential("k-0123456789abcdef", undefined), false);
  // Malformed values split on spaces and commas too.
  assert.equal(isOwnCredential("x-secret-value-1", "Bearer a, x-secret-value-1"), true);
});

test("an id a policy recognizes as a key is a credential, whatever the request's own key", () => {
  const known = (value: string) => value === "known-key-1";
  assert.equal(isCredentialAsId("known-key-1", undefined, known), true);
  assert.equal(isCredentialAsId("known-key-1", "Bearer other-key-22", known), true);
  assert.equal(isCredentialAsId("trace-42", "Bearer other-key-22", known), false);
  assert.equal(isCredentialAsId("other-key-22", "Bearer other-key-22", known), true);
});

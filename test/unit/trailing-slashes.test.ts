// Base paths and endpoints are written with or without a final slash: the gateway cuts them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { withoutTrailingSlashes } from "../../src/trailing-slashes.ts";

test("a path or a URL loses the slashes it ends with, and only those", () => {
  assert.equal(withoutTrailingSlashes("/v1/"), "/v1");
  assert.equal(withoutTrailingSlashes("/v1///"), "/v1");
  assert.equal(withoutTrailingSlashes("/"), "");
  assert.equal(withoutTrailingSlashes(""), "");
  assert.equal(withoutTrailingSlashes("/v1"), "/v1");
  assert.equal(withoutTrailingSlashes("http://collector:4318//v1/"), "http://collector:4318//v1");
});

test("a long run of slashes inside the text costs one scan, not one per slash", () => {
  // /\/+$/ took 37 s on this text (quadratic); the scan reads only the end.
  const text = `/${"/".repeat(200_000)}x`;
  const started = performance.now();
  assert.equal(withoutTrailingSlashes(text), text);
  assert.ok(performance.now() - started < 50);
});

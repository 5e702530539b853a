import assert from "node:assert/strict";
import { test } from "node:test";
import { isJsonMediaType, jsonMediaTypeOf, mediaTypeMatcher } from "../../src/media-types.ts";

const matchMediaType = <T extends { readonly mediaType: string }>(
  declared: readonly T[],
  contentType: string,
) => mediaTypeMatcher(declared)(contentType);

const declared = (...types: string[]) => types.map((mediaType) => ({ mediaType }));

test("a Content-Type matches the declared media type whatever its case and parameters", () => {
  const json = declared("application/json");
  assert.equal(matchMediaType(json, "application/json")?.mediaType, "application/json");
  assert.equal(matchMediaType(json, "Application/JSON; charset=utf-8")?.mediaType, "application/json");
  assert.equal(matchMediaType(json, "application/json-seq"), undefined);
  assert.equal(
    matchMediaType(json, "application/merge-patch+json"),
    undefined,
    "+json is not application/json",
  );
  assert.equal(matchMediaType(json, "text/plain"), undefined);
  assert.equal(matchMediaType(json, ""), undefined);
});

test("the most specific declared key wins: exact, then type/*, then */*", () => {
  const keys = declared("*/*", "application/*", "application/vnd.pets+json");
  assert.equal(matchMediaType(keys, "application/vnd.pets+json")?.mediaType, "application/vnd.pets+json");
  assert.equal(matchMediaType(keys, "application/json")?.mediaType, "application/*");
  assert.equal(matchMediaType(keys, "text/csv")?.mediaType, "*/*");
  assert.equal(matchMediaType(keys, "not a media type"), undefined);
});

test("application/json and structured +json types are read as JSON; others are not", () => {
  for (const type of [
    "application/json",
    "application/problem+json",
    "application/vnd.pets.v2+json; charset=utf-8",
  ]) {
    assert.equal(isJsonMediaType(type), true, type);
  }
  for (const type of ["text/plain", "application/jsonp", "application/x-www-form-urlencoded", "*/*"]) {
    assert.equal(isJsonMediaType(type), false, type);
  }
  assert.equal(
    jsonMediaTypeOf(["application/xml", "application/vnd.pets+json", "application/json"]),
    "application/json",
  );
  assert.equal(
    jsonMediaTypeOf(["application/xml", "application/vnd.pets+json"]),
    "application/vnd.pets+json",
  );
  assert.equal(jsonMediaTypeOf(["text/plain"]), undefined);
});

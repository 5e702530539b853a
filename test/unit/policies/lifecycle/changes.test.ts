// A candidate's sunsets against the running ones, wherever each is given: the document's
// x-gateway-deprecation or the gateway config (policies.lifecycle.operations), which dates the
// candidate too where its document does not. The team's own document marks getPet deprecated and
// leaves its dates to the config.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import policies from "../../../../policies/index.ts";
import { validateConfig } from "../../../../src/config.ts";
import { compareDocuments, type DocumentDifference } from "../../../../src/document-diff.ts";
import { loadDocument, OWN_DOCUMENT } from "../../../support/openapi-documents.ts";

// biome-ignore lint/suspicious/noExplicitAny: a parsed document, edited in place by each test
type Document = Record<string, any>;
const OWN: Document = JSON.parse(readFileSync(OWN_DOCUMENT, "utf8"));
const RUNNING = loadDocument(OWN);
const CONFIG_SUNSET = "2030-12-05T00:00:00Z";
/** The running config: getPet's sunset is the config's. */
const OPTIONS = validateConfig(
  { policies: { lifecycle: { operations: { getPet: { sunset: CONFIG_SUNSET } } } } },
  policies,
).policies;

/** The sunset differences from the running document to a copy `change` edited, with the running config. */
function sunsetsAfter(change: (document: Document) => void): DocumentDifference[] {
  const candidate = structuredClone(OWN);
  change(candidate);
  return compareDocuments(RUNNING, loadDocument(candidate), { policies, options: OPTIONS }).filter((d) =>
    d.kind.startsWith("sunset-"),
  );
}

const getPet = (d: Document) => d.paths["/pets/{petId}"].get;

describe("a sunset the config gives", () => {
  test("moved earlier by the candidate's document: breaking, saying where each date is given", () => {
    const [earlier, ...others] = sunsetsAfter((d) => {
      getPet(d)["x-gateway-deprecation"] = { sunset: "2029-01-01T00:00:00Z" };
    });
    assert.deepEqual(others, []);
    assert.equal(earlier?.kind, "sunset-earlier");
    assert.equal(earlier?.breaking, true);
    assert.equal(earlier?.operation, "getPet");
    assert.equal(
      earlier?.message,
      "the sunset moves earlier: 2029-01-01T00:00:00.000Z in x-gateway-deprecation.sunset (was 2030-12-05T00:00:00.000Z in policies.lifecycle.operations.getPet.sunset)",
    );
  });

  test("moved later by the candidate's document: said, and breaking nobody", () => {
    const found = sunsetsAfter((d) => {
      getPet(d)["x-gateway-deprecation"] = { sunset: "2031-06-01T00:00:00Z" };
    });
    assert.deepEqual(
      found.map((d) => [d.kind, d.breaking]),
      [["sunset-later", false]],
    );
  });

  test("left to the config by a candidate that changes something else: no sunset difference", () => {
    assert.deepEqual(
      sunsetsAfter((d) => {
        getPet(d).summary = "Get a pet, still";
      }),
      [],
    );
  });

  test("without it, the document's first sunset is a sunset moved earlier than none", () => {
    const candidate = structuredClone(OWN);
    getPet(candidate)["x-gateway-deprecation"] = { sunset: "2029-01-01T00:00:00Z" };
    const found = compareDocuments(RUNNING, loadDocument(candidate), {
      policies,
      options: validateConfig({}, policies).policies,
    }).filter((d) => d.kind.startsWith("sunset-"));
    assert.deepEqual(
      found.map((d) => [d.kind, d.breaking, d.message]),
      [
        [
          "sunset-earlier",
          true,
          "the sunset moves earlier: 2029-01-01T00:00:00.000Z in x-gateway-deprecation.sunset (was none)",
        ],
      ],
    );
  });
});

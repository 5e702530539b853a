// The span reference (docs/reference/tracing.md, from src/tracing/attributes.ts) names every fact
// the core can put on a server span: a fact written by a step of a request's way, or by decision
// mode, and missing from the table would reach collectors undocumented, and fail the export test
// only on the request that happens to set it.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { PROJECT_ROOT } from "../../../src/project-files.ts";
import {
  attributeNameOf,
  FACT_PREFIX,
  isListedAttribute,
  SERVER_SPAN_ATTRIBUTES,
} from "../../../src/tracing/attributes.ts";

test("every fact a pipeline step or a decision writes is a server span attribute the reference lists", () => {
  const written = new Set<string>();
  for (const folder of ["pipeline", "decision"]) {
    const root = join(PROJECT_ROOT, "src", folder);
    for (const file of readdirSync(root, { recursive: true, encoding: "utf8" })) {
      if (!file.endsWith(".ts")) continue;
      const text = readFileSync(join(root, file), "utf8");
      for (const match of text.matchAll(/exchange\.facts\.([A-Za-z]+) \??=/g))
        written.add(match[1] as string);
    }
  }
  for (const fact of ["upstreamFault", "traceparentDropped", "decidedFor", "decision"])
    assert.ok(written.has(fact), `${fact} among ${[...written].join(", ")}`);
  for (const fact of written) {
    const name = FACT_PREFIX + attributeNameOf(fact);
    assert.ok(isListedAttribute(name, SERVER_SPAN_ATTRIBUTES), name);
  }
});

test("an access line's camelCase name is a snake_case attribute name, as OpenTelemetry's naming asks", () => {
  assert.equal(attributeNameOf("daysToSunset"), "days_to_sunset");
  assert.equal(attributeNameOf("decidedFor"), "decided_for");
  assert.equal(attributeNameOf("aborted"), "aborted");
  // A page size named by the document keeps its own underscores, without doubling one.
  assert.equal(attributeNameOf("per_pageAdjusted"), "per_page_adjusted");
  assert.equal(attributeNameOf("page_Size"), "page_size");
  assert.equal(attributeNameOf("URLAdjusted"), "u_r_l_adjusted");
});

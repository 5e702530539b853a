// The span reference (docs/reference/tracing.md, from src/tracing/attributes.ts) names every fact
// the core can put on a server span: a fact written by a step of a request's way, or by decision
// mode, and missing from the table would reach collectors undocumented, and fail the export test
// only on the request that happens to set it.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { PROJECT_ROOT } from "../../../src/project-files.ts";
import { FACT_PREFIX, isListedAttribute, SERVER_SPAN_ATTRIBUTES } from "../../../src/tracing/attributes.ts";

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
    assert.ok(isListedAttribute(FACT_PREFIX + fact, SERVER_SPAN_ATTRIBUTES), `${FACT_PREFIX}${fact}`);
  }
});

// The reference pages under docs/reference/ are generated from the code (scripts/docs/): the
// settings from the config schemas, the errors from the catalogue, the metrics from the registry,
// the span attributes from the tracing module's table.
// They are held to it here, so that no field, code or metric changes without its page.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { test } from "node:test";
import policies from "../policies/index.ts";
import { configurationPage } from "../scripts/docs/configuration.ts";
import { referencePages } from "../scripts/docs/index.ts";
import { GENERATED } from "../scripts/docs/markdown.ts";
import { definePolicy } from "../src/policy.ts";
import { PROJECT_ROOT } from "../src/project-files.ts";

const pages = await referencePages();

/** Where the committed page first differs from the generated one, as a reader fixes it. */
function firstDifference(committed: string, generated: string): string {
  const had = committed.split("\n");
  const wants = generated.split("\n");
  const line = wants.findIndex((text, index) => text !== had[index]);
  const at = line === -1 ? wants.length : line;
  return `line ${at + 1}:\n  committed: ${had[at] ?? "(end of file)"}\n  generated: ${wants[at] ?? "(end of file)"}`;
}

for (const [path, generated] of Object.entries(pages)) {
  test(`${path} is what npm run docs generates from the code`, () => {
    let committed: string;
    try {
      committed = readFileSync(resolve(PROJECT_ROOT, path), "utf8");
    } catch {
      assert.fail(`${path} is missing: run npm run docs and commit it`);
    }
    if (committed !== generated) {
      assert.fail(
        `${path} differs from what the code generates, at ${firstDifference(committed, generated)}\nrun npm run docs and commit the page`,
      );
    }
  });
}

test("the generator writes the four reference pages the docs link to", () => {
  assert.deepEqual(Object.keys(pages).sort(), [
    "docs/reference/configuration.md",
    "docs/reference/errors.md",
    "docs/reference/metrics.md",
    "docs/reference/tracing.md",
  ]);
});

test("every reference page says it is generated, in its first line", () => {
  for (const [path, text] of Object.entries(pages)) {
    assert.equal(text.split("\n")[0], GENERATED, path);
  }
});

test("a setting without a description stops the generator, naming the field", () => {
  const probe = definePolicy({
    name: "probe",
    optionsSchema: {
      type: "object",
      description: "A policy whose option is not described",
      properties: { tag: { type: "string" } },
    },
    create: () => ({ forOperation: () => undefined }),
  });
  assert.throws(() => configurationPage([...policies, probe]), {
    message: /^policies\.probe\.tag has no description/,
  });
});

test("an environment variable for an option the schema lacks stops the generator, naming both", () => {
  const probe = definePolicy({
    name: "probe",
    environment: { PROBE_TAG: "tag" },
    optionsSchema: {
      type: "object",
      description: "A policy that maps a variable to nothing",
      properties: {},
    },
    create: () => ({ forOperation: () => undefined }),
  });
  assert.throws(() => configurationPage([...policies, probe]), {
    message: "PROBE_TAG sets /policies/probe/tag, which is no field of the config schema",
  });
});

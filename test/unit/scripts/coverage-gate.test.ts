// The coverage gate CI runs after `npm run test:coverage`: per directory, against floors that only rise.
import assert from "node:assert/strict";
import { test } from "node:test";
import { coverageByDirectory, judgeCoverage } from "../../../scripts/coverage-gate.ts";

const LCOV = [
  "TN:",
  "SF:src/a.ts",
  "LF:10",
  "LH:9",
  "end_of_record",
  "SF:src/b.ts",
  "LF:10",
  "LH:10",
  "end_of_record",
  "SF:src/pipeline/c.ts",
  "LF:4",
  "LH:2",
  "end_of_record",
].join("\n");

test("lines are summed per directory, not per file or per tree", () => {
  assert.deepEqual(coverageByDirectory(LCOV), [
    { directory: "src", found: 20, hit: 19 },
    { directory: "src/pipeline", found: 4, hit: 2 },
  ]);
});

test("a directory below its floor fails the gate, and so does one without a floor", () => {
  const directories = coverageByDirectory(LCOV);
  assert.equal(judgeCoverage(directories, { src: 95, "src/pipeline": 50 }).passed, true);
  const below = judgeCoverage(directories, { src: 95.5, "src/pipeline": 50 });
  assert.equal(below.passed, false);
  assert.match(below.lines[0] as string, /^src\s+95\.00 %.*BELOW$/);
  const missing = judgeCoverage(directories, { src: 95 });
  assert.equal(missing.passed, false);
  assert.match(missing.lines[1] as string, /no floor/);
});

// The profile table of docs/performance.md (npm run bench -- --profile): every file of the gateway
// has a step, a sample goes to the step of its nearest caller that has one, and the committed
// table's rows add up to the total it states.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import {
  accountSteps,
  markedBlock,
  parseStepTable,
  readStepTable,
  ruleFor,
  UNMAPPED,
} from "../../../scripts/bench/profile-steps.ts";
import type { CpuProfile } from "../../../scripts/bench/profile-summary.ts";

const ROOT = join(import.meta.dirname, "../../..");

function sourceFiles(directory: string): string[] {
  return readdirSync(join(ROOT, directory), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts"))
    .map((name) => relative(ROOT, join(ROOT, directory, name)));
}

test("every file under src/ and policies/ has a step in scripts/bench/profile-steps.json", () => {
  const table = readStepTable();
  const missing = [...sourceFiles("src"), ...sourceFiles("policies")].filter(
    (file) => ruleFor(table, file) === undefined,
  );
  assert.deepEqual(missing, [], "add a rule for each of these files");
});

test("a file in a new policy's folder is that policy's step without a line in the table", () => {
  const table = readStepTable();
  assert.equal(ruleFor(table, "policies/rate-limit/index.ts"), "policy rate-limit");
  assert.equal(ruleFor(table, "policies/limit/index.ts"), "policy limit");
  assert.equal(ruleFor(table, "src/no-such-file.ts"), undefined);
});

test("a sample goes to the nearest caller with a step; an unknown file is shown as unmapped", () => {
  const root = "/repo";
  const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
    id,
    callFrame: { functionName, url, lineNumber: 0 },
    children,
  });
  const profile: CpuProfile = {
    nodes: [
      frame(1, "(root)", "", [2, 7, 8]),
      frame(2, "onRequest", "file:///repo/dist/policies/auth/index.js", [3, 9]),
      frame(3, "validate", "file:///repo/node_modules/ajv/dist/x.js", [4]),
      frame(4, "createHash", "node:internal/crypto/hash", [5]),
      frame(5, "digest", "", []),
      frame(7, "mystery", "file:///repo/elsewhere/thing.js", []),
      frame(8, "(garbage collector)", "", []),
      frame(9, "writev", "", []),
    ],
    // 5 (digest under ajv under node: under auth) twice, 7 (unknown file), 8 (GC), 9 (a write
    // syscall under auth) once each; 1 ms after each.
    samples: [5, 7, 8, 5, 9],
    timeDeltas: [0, 1000, 1000, 1000, 1000, 1000],
    startTime: 0,
    endTime: 4000,
  };
  const table = {
    frames: { "(garbage collector)": "GC" },
    leaves: { writev: "write syscalls" },
    paths: {
      "policies/auth/": "auth",
      "node_modules/ajv/": "^check",
      "node:": "^node",
    },
  };
  const account = accountSteps(profile, root, table);
  assert.deepEqual(Object.fromEntries(account.steps), {
    auth: 2,
    [UNMAPPED]: 1,
    GC: 1,
    "write syscalls: auth": 1,
  });
  assert.deepEqual(Object.fromEntries(account.unmappedPaths), { "elsewhere/thing.js": 1 });
  assert.equal(account.busyMs, 5);
});

test("the profile table in docs/performance.md has rows that add up to its stated total", () => {
  const block = markedBlock(readFileSync(join(ROOT, "docs/performance.md"), "utf8"));
  assert.ok(block !== undefined, "docs/performance.md has the profile table's markers");
  const { rows, total } = parseStepTable(block);
  assert.ok(rows.length >= 10, `the table has its rows (${rows.length})`);
  const sum = rows.reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(sum - total) < 0.005 * rows.length, `rows sum to ${sum}, the table says ${total}`);
});

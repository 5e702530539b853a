// `npm run keys` as a user types it, and the CLI's bad arguments, each a process of its own: the
// npm script's wiring and a matrix of refusals (test/slow/keys-cli.test.ts drives the CLI itself).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { sha256 } from "../support/keys.ts";
import { add, entries, KEY_LINE, keys } from "../support/keys-command.ts";
import type { ProgramRun } from "../support/processes.ts";

const directory = mkdtempSync(join(tmpdir(), "gw-keys-cli-"));
after(() => rmSync(directory, { recursive: true, force: true }));

test("the npm script runs the CLI, with API_KEYS_FILE as the default file", async () => {
  const file = join(directory, "from-env.json");
  const run = await keys(["add", "ci"], { API_KEYS_FILE: file }, "npm");
  assert.equal(run.code, 0, run.stderr);
  const key = KEY_LINE.exec(run.stdout)?.[1];
  assert.ok(key, JSON.stringify(run.stdout));
  assert.equal(entries(file)[0]?.sha256, sha256(key));
});

test("bad input changes nothing and says why", async () => {
  const file = join(directory, "guarded.json");
  await add(file, "acme");
  const before = readFileSync(file, "utf8");
  const cases: { args: string[]; code: number; says: RegExp }[] = [
    { args: ["add", "bad name"], code: 2, says: /a consumer name is 1 to 64 letters/ },
    { args: ["add"], code: 2, says: /a consumer name is required/ },
    { args: ["add", "acme", "--not-after", "someday"], code: 2, says: /--not-after must be a date/ },
    { args: ["rotate", "acme"], code: 2, says: /unknown command rotate/ },
    { args: ["add", "acme", "--colour"], code: 2, says: /Unknown option '--colour'/ },
    { args: ["revoke", "nobody"], code: 1, says: /no key of nobody/ },
    { args: ["revoke", "acme", "--digest", "xyz"], code: 2, says: /--digest takes at least 4 hex digits/ },
    {
      args: ["revoke", "acme", "--digest", "00000000"],
      code: 1,
      says: /no key of acme with a digest starting/,
    },
  ];
  const broken = join(directory, "broken.json");
  writeFileSync(broken, '{"keys": [');
  // None of them may write, so they run at once; the file is compared once they all ended.
  const [runs, refused, missing] = await Promise.all([
    Promise.all(cases.map(({ args }) => keys([...args, "--file", file]))),
    keys(["add", "acme", "--file", broken]),
    keys(["list", "--file", join(directory, "absent.json")]),
  ]);
  for (const [index, { args, code, says }] of cases.entries()) {
    const run = runs[index] as ProgramRun;
    assert.equal(run.code, code, `${args.join(" ")}: ${run.stderr}`);
    assert.match(run.stderr, says);
    assert.equal(run.stdout, "");
  }
  assert.equal(readFileSync(file, "utf8"), before);

  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    /is not a valid key file, left as it is: \/keys\/0 is not valid JSON \(it ends too early\)$/m,
  );
  assert.equal(readFileSync(broken, "utf8"), '{"keys": [');

  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /absent\.json does not exist/);
});

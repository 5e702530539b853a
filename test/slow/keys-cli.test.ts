// `npm run keys` end to end: the CLI as its own process editing a key file (a private file, the
// digest only, modes, symlinks, concurrent edits, listing). Here, not in npm test: these processes of
// the CLI cost most of the 4.7 s of CPU that made test/keys the heaviest file of that 60-second suite;
// the keys it prints opening a gateway stay there (test/keys.test.ts). The npm script itself and the
// matrix of bad arguments: test/slow/keys-command.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { sha256 } from "../support/keys.ts";
import { add, entries, KEY_LINE, keys } from "../support/keys-command.ts";

const directory = mkdtempSync(join(tmpdir(), "gw-keys-cli-"));
after(() => rmSync(directory, { recursive: true, force: true }));

describe("npm run keys", () => {
  test("add makes a private file, prints the key once on stdout and stores only its digest", async () => {
    const file = join(directory, "fresh.json");
    const run = await keys(["add", "acme", "--file", file]);
    assert.equal(run.code, 0, run.stderr);
    const key = KEY_LINE.exec(run.stdout)?.[1] as string;
    assert.ok(key, run.stdout);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const [entry, ...others] = entries(file);
    assert.equal(others.length, 0);
    assert.equal(entry?.consumer, "acme");
    assert.equal(entry?.sha256, sha256(key));
    assert.match(entry?.created ?? "", /^\d{4}-\d\d-\d\dT/);
    assert.ok(!readFileSync(file, "utf8").includes(key), "the key itself is not stored");
    // What people read says whose key and which one, never the key again or its whole digest.
    assert.match(run.stderr, new RegExp(`a key for acme \\(sha256 ${sha256(key).slice(0, 8)}…`));
    assert.match(run.stderr, /only time the key is shown/);
    assert.ok(!run.stderr.includes(key) && !run.stderr.includes(sha256(key)));
    assert.deepEqual(
      readdirSync(directory).filter((name) => name.startsWith(".")),
      [],
      "no temporary or lock file left behind",
    );
  });

  test("list shows consumers and digest prefixes, never a full digest", async () => {
    const file = join(directory, "list.json");
    const first = await add(file, "acme");
    const second = await add(file, "acme", "--not-after", "2000-01-01");
    await add(file, "beta");
    const run = await keys(["list", "--file", file]);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.trim().split("\n");
    assert.match(lines[0] ?? "", /^CONSUMER\s+SHA256\s+CREATED\s+NOT AFTER$/);
    assert.equal(lines.length, 4);
    assert.match(lines[1] ?? "", new RegExp(`^acme\\s+${sha256(first).slice(0, 8)}…\\s+\\S+\\s+-$`));
    assert.match(lines[2] ?? "", /2000-01-01T00:00:00.000Z \(expired\)$/);
    assert.match(lines[3] ?? "", /^beta\s/);
    assert.doesNotMatch(run.stdout, /[0-9a-f]{9}/, "nothing longer than a prefix");
    assert.ok(!run.stdout.includes(first) && !run.stdout.includes(second));
  });

  test("API_KEYS_FILE is the default file", async () => {
    const file = join(directory, "from-env.json");
    const run = await keys(["add", "ci"], { API_KEYS_FILE: file });
    assert.equal(run.code, 0, run.stderr);
    const key = KEY_LINE.exec(run.stdout)?.[1];
    assert.ok(key, JSON.stringify(run.stdout));
    assert.equal(entries(file)[0]?.sha256, sha256(key));
  });

  test("an existing file keeps its mode and its other fields; an edit through a symlink keeps the link", async () => {
    const real = join(directory, "real.json");
    writeFileSync(
      real,
      JSON.stringify({
        $comment: "ours",
        keys: [{ consumer: "acme", sha256: sha256("an old key"), owner: "team-a" }],
      }),
    );
    chmodSync(real, 0o640);
    const link = join(directory, "link.json");
    symlinkSync(real, link);
    await add(link, "beta");
    assert.ok(lstatSync(link).isSymbolicLink());
    assert.equal(statSync(real).mode & 0o777, 0o640);
    const file = JSON.parse(readFileSync(real, "utf8")) as {
      $comment: string;
      keys: Record<string, string>[];
    };
    assert.equal(file.$comment, "ours");
    assert.equal(file.keys[0]?.owner, "team-a");
    assert.equal(file.keys[1]?.consumer, "beta");
  });

  test("add --mode 0644 makes a file others can read whatever the umask, and later edits keep the mode", async () => {
    const file = join(directory, "shared.json");
    // The CLI inherits this umask: with it, a file created without fchmod would come out 0600.
    const umask = process.umask(0o077);
    try {
      await add(file, "acme", "--mode", "0644");
      assert.equal(statSync(file).mode & 0o777, 0o644);
      await add(file, "beta");
      assert.equal(statSync(file).mode & 0o777, 0o644);
    } finally {
      process.umask(umask);
    }
  });

  test("a key file made with --mode 0644 is read by the image's non-root user, uid 1000", {
    skip: process.getuid?.() === 0 ? false : "reading as another user needs root to switch to it",
  }, async () => {
    const shared = mkdtempSync(join(tmpdir(), "gw-keys-shared-"));
    // The directory as the docs ask for it: searchable by the container's user.
    chmodSync(shared, 0o755);
    const file = join(shared, "api-keys.json");
    const key = await add(file, "acme", "--mode", "0644");
    // cat, not node: the test's node may sit where uid 1000 cannot run it (under /root).
    const read = spawn("cat", [file], { uid: 1000, gid: 1000, stdio: ["ignore", "pipe", "pipe"] });
    let text = "";
    read.stdout.on("data", (chunk: Buffer) => {
      text += chunk;
    });
    const [code] = await once(read, "exit");
    rmSync(shared, { recursive: true, force: true });
    assert.equal(code, 0);
    assert.equal((JSON.parse(text) as { keys: { sha256: string }[] }).keys[0]?.sha256, sha256(key));
  });

  test("--mode takes an octal mode and nothing else", async () => {
    const file = join(directory, "modes.json");
    for (const mode of ["rw-r--r--", "01777"]) {
      const run = await keys(["add", "acme", "--file", file, "--mode", mode]);
      assert.equal(run.code, 2, mode);
      assert.match(run.stderr, /--mode takes an octal file mode/);
    }
    assert.ok(!existsSync(file), "nothing written");
  });

  test("concurrent adds all land (the edits are serialized)", async () => {
    const file = join(directory, "concurrent.json");
    const added = await Promise.all(["a", "b", "c", "d"].map((consumer) => add(file, consumer)));
    assert.deepEqual(
      entries(file)
        .map((entry) => entry.sha256)
        .sort(),
      added.map(sha256).sort(),
    );
  });
});

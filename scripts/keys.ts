// The API key file's CLI (npm run keys -- <command>):
//   add <consumer> [--not-after <date>]   a new key: its digest goes to the file, the key to stdout, once
//   list                                  consumers, digest prefixes, dates (never a full digest)
//   revoke <consumer> [--digest <prefix>] removes the consumer's keys (or the one with that digest prefix)
// Every command takes --file <path>; the default is $API_KEYS_FILE, else config/api-keys.json.
// add and revoke take --mode <octal>, the file's mode from this edit on (0644 for a container's user).
// Edits are atomic (a temporary file renamed over the old one) so a gateway polling the file
// never reads half of it, and serialized by a lock file so two edits never lose one another.
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { parseArgs } from "node:util";
import {
  CONSUMER_PATTERN,
  DIGEST_PREFIX_LENGTH,
  digestOf,
  digestPrefix,
  formatKeyFile,
  generateKey,
  type KeyFile,
  parseKeyFile,
} from "../policies/auth/key-file.ts";
import { fromUserDirectory, PROJECT_ROOT } from "../src/project-files.ts";

const USAGE = `usage: npm run keys -- <command> [--file <path>]
  add <consumer> [--not-after <date>]    generate a key for <consumer>; prints it once
  list                                   consumers and the first ${DIGEST_PREFIX_LENGTH} hex digits of each key's digest
  revoke <consumer> [--digest <prefix>]  remove the consumer's keys, or only the one whose digest starts with <prefix>
The file is --file, else $API_KEYS_FILE, else config/api-keys.json. A running gateway picks up a change within 5 s.
add and revoke take --mode <octal>: the file's mode from this edit on, e.g. 0644 so that a container's user
(the image's uid 1000) can read it; without it a new file is 0600 and an existing one keeps its mode.`;

class UsageError extends Error {}

function main(argv: readonly string[]): void {
  let parsed: ReturnType<typeof readArgs>;
  try {
    parsed = readArgs(argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const [command, consumer, ...rest] = positionals;
  if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`);
  const typed = values.file ?? process.env.API_KEYS_FILE;
  const file = typed ? fromUserDirectory(typed) : join(PROJECT_ROOT, "config/api-keys.json");
  const mode = fileMode(values.mode);
  if (mode !== undefined && command === "list") throw new UsageError("list takes no --mode");
  switch (command) {
    case "add":
      return add(file, requireConsumer(consumer), values["not-after"], mode);
    case "list":
      if (consumer !== undefined) throw new UsageError("list takes no consumer");
      return list(file);
    case "revoke":
      return revoke(file, requireConsumer(consumer), values.digest, mode);
    default:
      throw new UsageError(command === undefined ? "a command is required" : `unknown command ${command}`);
  }
}

function readArgs(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    options: {
      file: { type: "string" },
      "not-after": { type: "string" },
      digest: { type: "string" },
      mode: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
    allowPositionals: true,
  });
}

function fileMode(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^0?[0-7]{3}$/.test(text)) throw new UsageError("--mode takes an octal file mode, e.g. 0644");
  return Number.parseInt(text, 8);
}

function requireConsumer(consumer: string | undefined): string {
  if (consumer === undefined) throw new UsageError("a consumer name is required");
  if (!new RegExp(CONSUMER_PATTERN).test(consumer)) {
    throw new UsageError(
      "a consumer name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
    );
  }
  return consumer;
}

function add(
  file: string,
  consumer: string,
  notAfterText: string | undefined,
  mode: number | undefined,
): void {
  let notAfter: string | undefined;
  if (notAfterText !== undefined) {
    const time = Date.parse(notAfterText);
    if (Number.isNaN(time)) throw new UsageError("--not-after must be a date, e.g. 2030-12-31T23:59:59Z");
    notAfter = new Date(time).toISOString();
  }
  const key = generateKey();
  const sha256 = digestOf(key);
  let count = 0;
  edit(file, true, mode, (keys) => {
    count = keys.keys.filter((entry) => entry.consumer === consumer).length + 1;
    keys.keys.push({
      consumer,
      sha256,
      created: new Date().toISOString(),
      ...(notAfter === undefined ? {} : { notAfter }),
    });
  });
  // The key alone on stdout, so that KEY=$(npm run -s keys -- add acme) works; the rest is for people.
  process.stdout.write(`${key}\n`);
  process.stderr.write(
    `Added a key for ${consumer} (sha256 ${digestPrefix(sha256)}…, ${count} key${count === 1 ? "" : "s"} for ${consumer} now) to ${file}.\n` +
      "This is the only time the key is shown: only its digest is stored.\n",
  );
}

function list(file: string): void {
  const keys = readKeyFile(file);
  if (keys === undefined) throw new Error(`${file} does not exist (npm run keys -- add <consumer> makes it)`);
  const now = Date.now();
  const rows = keys.keys.map((entry) => {
    const expires = entry.notAfter === undefined ? "-" : entry.notAfter;
    const expired = entry.notAfter !== undefined && Date.parse(entry.notAfter) < now;
    return [
      entry.consumer,
      `${digestPrefix(entry.sha256)}…`,
      typeof entry.created === "string" ? entry.created : "-",
      expired ? `${expires} (expired)` : expires,
    ];
  });
  const table = [["CONSUMER", "SHA256", "CREATED", "NOT AFTER"], ...rows];
  const widths =
    table[0]?.map((_, column) => Math.max(...table.map((row) => (row[column] ?? "").length))) ?? [];
  for (const row of table) {
    process.stdout.write(
      `${row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join("  ")
        .trimEnd()}\n`,
    );
  }
}

function revoke(file: string, consumer: string, prefix: string | undefined, mode: number | undefined): void {
  if (prefix !== undefined && !/^[0-9a-f]{4,64}$/i.test(prefix)) {
    throw new UsageError("--digest takes at least 4 hex digits of the key's digest, as list shows them");
  }
  let removed = 0;
  edit(file, false, mode, (keys) => {
    const matches = (entry: KeyFile["keys"][number]) =>
      entry.consumer === consumer && (prefix === undefined || entry.sha256.startsWith(prefix.toLowerCase()));
    removed = keys.keys.filter(matches).length;
    if (removed === 0) {
      throw new Error(
        `no key of ${consumer}${prefix === undefined ? "" : ` with a digest starting ${prefix}`} in ${file}`,
      );
    }
    if (prefix !== undefined && removed > 1) {
      throw new Error(`${removed} keys of ${consumer} have digests starting ${prefix}: give more digits`);
    }
    keys.keys = keys.keys.filter((entry) => !matches(entry));
  });
  process.stderr.write(
    `Revoked ${removed} key${removed === 1 ? "" : "s"} of ${consumer} in ${file}; a running gateway refuses ${removed === 1 ? "it" : "them"} within 5 s.\n`,
  );
}

/** The file parsed, or undefined when it does not exist. A broken file is an error: never overwrite what cannot be read. */
function readKeyFile(file: string): KeyFile | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    return parseKeyFile(text);
  } catch (error) {
    throw new Error(`${file} is not a valid key file, left as it is: ${(error as Error).message}`);
  }
}

function edit(
  file: string,
  create: boolean,
  givenMode: number | undefined,
  change: (keys: KeyFile) => void,
): void {
  // Through a symlink to the real file, so the link stays a link; a read-only mount (a
  // Kubernetes Secret) fails here with EROFS, as it should: edit the Secret's source instead.
  let target = file;
  try {
    target = realpathSync(file);
  } catch {
    // does not exist yet
  }
  const lock = join(dirname(target), `.${basename(target)}.lock`);
  const release = acquire(lock);
  try {
    const keys = readKeyFile(target);
    if (keys === undefined && !create) throw new Error(`${file} does not exist`);
    const next = keys ?? { keys: [] };
    change(next);
    // Digests are not keys, but nobody else needs to read them: 0600 unless the file had a mode already.
    let mode = 0o600;
    try {
      mode = statSync(target).mode & 0o777;
    } catch {
      // new file
    }
    mode = givenMode ?? mode;
    const temporary = join(dirname(target), `.${basename(target)}.${process.pid}.tmp`);
    try {
      const fd = openSync(temporary, "wx", mode);
      try {
        // The mode asked for, whatever the umask took away from it at open.
        fchmodSync(fd, mode);
        writeFileSync(fd, formatKeyFile(next));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temporary, target);
      syncDirectory(dirname(target));
    } catch (error) {
      try {
        unlinkSync(temporary);
      } catch {
        // never created or already renamed
      }
      throw error;
    }
  } finally {
    release();
  }
}

// The rename itself survives a crash only once the directory is on disk too.
function syncDirectory(directory: string): void {
  try {
    const fd = openSync(directory, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // not every platform can open a directory; the rename is still atomic
  }
}

function acquire(lock: string): () => void {
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      closeSync(openSync(lock, "wx", 0o600));
      return () => unlinkSync(lock);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (Date.now() > deadline) {
        throw new Error(`${lock} is held by another edit; remove it if no other npm run keys is running`);
      }
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    }
  }
}

try {
  main(process.argv.slice(2));
} catch (error) {
  const usage = error instanceof UsageError;
  process.stderr.write(`keys: ${(error as Error).message}\n${usage ? `${USAGE}\n` : ""}`);
  process.exitCode = usage ? 2 : 1;
}

// `npm run keys`, the key file's CLI, as its own process: for the suites that drive it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { type ProgramRun, runProgram } from "./processes.ts";

/**
 * The CLI as its own process (`node scripts/keys.ts`, or `npm run keys` when `command` is "npm");
 * never without --file or API_KEYS_FILE, so the repository's file is safe.
 */
export function keys(
  args: readonly string[],
  env: Record<string, string> = {},
  command: "node" | "npm" = "node",
): Promise<ProgramRun> {
  return runProgram(
    command === "npm" ? ["run", "--silent", "keys", "--", ...args] : ["scripts/keys.ts", ...args],
    {
      ...(command === "npm" ? { program: "npm" } : {}),
      env: { HOME: process.env.HOME ?? "", ...env },
    },
  );
}

/** What `add` prints on stdout: the new key, alone on its line. */
export const KEY_LINE = /^(pgw_[A-Za-z0-9_-]{43})\n$/;

/** Adds a key and returns it, checking the CLI printed it alone on stdout. */
export async function add(file: string, consumer: string, ...more: string[]): Promise<string> {
  const run = await keys(["add", consumer, "--file", file, ...more]);
  assert.equal(run.code, 0, run.stderr);
  const match = KEY_LINE.exec(run.stdout);
  assert.ok(match, `stdout: ${JSON.stringify(run.stdout)}`);
  return match[1] as string;
}

/** The entries of a key file, as written. */
export const entries = (file: string) =>
  (JSON.parse(readFileSync(file, "utf8")) as { keys: Record<string, string>[] }).keys;

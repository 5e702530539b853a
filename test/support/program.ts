// The gateway program as `npm start` runs it, for tests that start it as its own process.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { buildForStart, GATEWAY_ENTRY, GATEWAY_NODE_FLAGS } from "../../scripts/start-command.ts";

export const PROJECT_ROOT = resolve(import.meta.dirname, "../..");
/** Node's arguments for the gateway program as `npm start` runs it: its flags, then the build's entry. */
export const GATEWAY_PROGRAM: readonly string[] = [...GATEWAY_NODE_FLAGS, GATEWAY_ENTRY];

// `npm test` builds first. A test file run alone after an edit builds here, so that it never
// starts an older program than the sources it reads.
{
  const entry = join(PROJECT_ROOT, GATEWAY_ENTRY);
  const builtAt = existsSync(entry) ? statSync(entry).mtimeMs : 0;
  const newestSource = ["src", "policies"]
    .flatMap((dir) =>
      readdirSync(join(PROJECT_ROOT, dir), { recursive: true, encoding: "utf8" })
        .filter((file) => file.endsWith(".ts"))
        .map((file) => statSync(join(PROJECT_ROOT, dir, file)).mtimeMs),
    )
    .reduce((a, b) => Math.max(a, b), 0);
  if (newestSource > builtAt) buildForStart(PROJECT_ROOT);
}

/**
 * What a test's child process inherits from it: PATH, and Node's compile cache when the suite runs
 * with one (package.json's test scripts set NODE_COMPILE_CACHE), so that each process does not
 * strip the types of the same sources again.
 */
export function childEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "" };
  if (process.env.NODE_COMPILE_CACHE) env.NODE_COMPILE_CACHE = process.env.NODE_COMPILE_CACHE;
  return env;
}

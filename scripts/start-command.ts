// How `npm start` runs the gateway: package.json's "start" and the Dockerfile's CMD say the same,
// and test/start-command.test.ts holds both to these two constants. The tests, the benchmark and
// the soak start the gateway process exactly so.
import { execFileSync } from "node:child_process";
import { join } from "node:path";

/**
 * Node's own flags for the gateway: a small young generation. V8 sizes the default one from the
 * machine's memory and grows it under load, and RSS with it; held small it costs no speed
 * (docs/performance.md, Memory).
 */
export const GATEWAY_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=8"];
/** The program, relative to the project root: the build, as `npm start` makes it first. */
export const GATEWAY_ENTRY = "dist/src/main.js";

/** Builds the tree as `npm start` does before it runs (its prestart). */
export function buildForStart(root: string): void {
  execFileSync(join(root, "node_modules/.bin/tsc"), ["-p", "tsconfig.build.json"], {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"],
  });
}

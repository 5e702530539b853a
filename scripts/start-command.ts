// What `npm start` runs, read from package.json: the tests, the benchmark and the soak start the
// gateway process exactly so, and test/start-command.test.ts holds the Dockerfile's CMD to it.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface StartCommand {
  /** Node's own flags, e.g. ["--max-semi-space-size=8"]. */
  readonly nodeFlags: readonly string[];
  /** The program, relative to the project root, e.g. "dist/src/main.js". */
  readonly entry: string;
}

export function startCommand(root: string): StartCommand {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    scripts: { start: string };
  };
  // "exec": the shell npm starts the script in becomes node, so npm's SIGTERM reaches the gateway.
  const words = manifest.scripts.start
    .trim()
    .split(/\s+/)
    .filter((word, index) => !(index === 0 && word === "exec"));
  const entry = words.at(-1);
  if (words[0] !== "node" || entry === undefined || entry.startsWith("-"))
    throw new Error(`package.json: "start" is not "[exec] node [flags] program": ${manifest.scripts.start}`);
  return { nodeFlags: words.slice(1, -1), entry };
}

/** Builds the tree the way `npm start` does before it runs, when its program is the build's. */
export function buildForStart(root: string, tsc: string): void {
  if (!startCommand(root).entry.startsWith("dist/")) return;
  execFileSync(tsc, ["-p", "tsconfig.build.json"], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
}

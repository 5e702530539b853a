import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { startCommand } from "../scripts/start-command.ts";
import { GATEWAY_PROGRAM, PROJECT_ROOT } from "./harness.ts";

test("the Docker image runs exactly what npm start runs, and so do the tests that start the gateway program", () => {
  const dockerfile = readFileSync(join(PROJECT_ROOT, "Dockerfile"), "utf8");
  const cmd = [...dockerfile.matchAll(/^CMD (\[.*\])$/gm)].at(-1)?.[1];
  assert.ok(cmd, "the Dockerfile has a CMD in exec form");
  const { nodeFlags, entry } = startCommand(PROJECT_ROOT);
  assert.deepEqual(JSON.parse(cmd), ["node", ...nodeFlags, entry]);
  // The tests' program against the image's, not against the same parse of package.json.
  assert.deepEqual(["node", ...GATEWAY_PROGRAM], JSON.parse(cmd));
});

test("npm start runs the build, and the image copies the build npm start would make", () => {
  const manifest = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  };
  const { entry } = startCommand(PROJECT_ROOT);
  assert.match(entry, /^dist\//);
  // npm test built it as npm start does: the program the image would run is there.
  assert.ok(existsSync(join(PROJECT_ROOT, entry)), `${entry} was not built by tsc -p tsconfig.build.json`);
  assert.match(manifest.scripts.prestart ?? "", /tsc -p tsconfig\.build\.json/);
  const dockerfile = readFileSync(join(PROJECT_ROOT, "Dockerfile"), "utf8");
  assert.match(dockerfile, /RUN npx tsc -p tsconfig\.build\.json/);
  assert.match(dockerfile, /COPY --from=build \/app\/dist \.\/dist/);
});

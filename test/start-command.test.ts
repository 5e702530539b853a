import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { GATEWAY_ENTRY, GATEWAY_NODE_FLAGS } from "../scripts/start-command.ts";
import { PROJECT_ROOT } from "./support/program.ts";

test("npm start, the Docker image and the tests run the same build with the same node flags", () => {
  const manifest = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  };
  // "exec": the shell npm starts the script in becomes node, so npm's SIGTERM reaches the gateway.
  assert.equal(manifest.scripts.start, ["exec", "node", ...GATEWAY_NODE_FLAGS, GATEWAY_ENTRY].join(" "));
  assert.match(manifest.scripts.prestart ?? "", /tsc -p tsconfig\.build\.json/);
  const dockerfile = readFileSync(join(PROJECT_ROOT, "Dockerfile"), "utf8");
  assert.equal(
    dockerfile.match(/^CMD (\[.*\])$/gm)?.at(-1),
    `CMD ${JSON.stringify(["node", ...GATEWAY_NODE_FLAGS, GATEWAY_ENTRY]).replaceAll(",", ", ")}`,
  );
  assert.match(dockerfile, /RUN npx tsc -p tsconfig\.build\.json/);
  assert.match(dockerfile, /COPY --from=build \/app\/dist \.\/dist/);
});

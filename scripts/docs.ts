// npm run docs: writes the reference pages generated from the code (scripts/docs/) into
// docs/reference/. A test fails when the committed pages differ from what the code generates.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { PROJECT_ROOT } from "../src/project-files.ts";
import { referencePages } from "./docs/index.ts";

for (const [path, text] of Object.entries(await referencePages())) {
  const file = resolve(PROJECT_ROOT, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  process.stdout.write(`wrote ${path}\n`);
}

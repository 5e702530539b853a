// Writes docs/plugin-mode/capabilities.md from the plugin-mode matrix's results: runs every case
// in proxy mode, through Debian's nginx, Caddy and HAProxy and through the Envoy and Traefik
// harnesses (the three must be installed).
//
//   node scripts/plugin-mode-capabilities.ts
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { capabilityPage, matrixSkipReason, runMatrix } from "../test/support/plugin-matrix.ts";

const skip = matrixSkipReason();
if (skip !== undefined) {
  process.stderr.write(`plugin-mode-capabilities: ${skip}\n`);
  process.exit(1);
}
const directory = mkdtempSync(join(tmpdir(), "gw-matrix-"));
try {
  const page = capabilityPage(await runMatrix(directory));
  writeFileSync(join(import.meta.dirname, "../docs/plugin-mode/capabilities.md"), page);
} finally {
  rmSync(directory, { recursive: true, force: true });
}

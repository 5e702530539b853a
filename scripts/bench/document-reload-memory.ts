// The memory a reload of the document needs: both versions live for a moment (the new one built
// while the old one serves, the old one closed once its last request ends). Measures the RSS and
// heap of a gateway in this process before a reload, at its peak (right after the swap, before the
// old version is collected) and after it, for the Pet Store document and a large generated one.
// Run: node scripts/bench/document-reload-memory.ts [operations]
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import { createGateway } from "../../src/gateway.ts";
import { createLogger } from "../../src/logger.ts";
import { DEFAULT_OPENAPI_FILE } from "../../src/project-files.ts";
import { manyOperationsDocument } from "../../test/support/costly-documents.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");
const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const settle = () => {
  for (let i = 0; i < 3; i++) gc();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss: mb(rss), heap: mb(heapUsed) };
};

// biome-ignore lint/suspicious/noExplicitAny: a parsed document, edited in place
async function measure(name: string, document: Record<string, unknown>, change: (d: any) => void) {
  const folder = mkdtempSync(join(tmpdir(), "reload-memory-"));
  const file = join(folder, "openapi.json");
  const keys = join(folder, "keys.json");
  writeFileSync(keys, readFileSync(join(import.meta.dirname, "../../config/api-keys.example.json")));
  writeFileSync(file, JSON.stringify(document));
  const config = validateConfig(
    { openapi: file, document: { allowBreaking: true }, policies: { auth: { keysFile: keys } } },
    policies,
  );
  const { logger } = createLogger("error");
  const baseline = settle();
  const gateway = createGateway({
    config,
    policies,
    upstreamUrl: "http://127.0.0.1:9/v1",
    environment: "production",
    logger,
  });
  const before = settle();
  const next = structuredClone(document);
  change(next);
  writeFileSync(file, JSON.stringify(next));
  const started = performance.now();
  // A request in flight keeps the old version alive: both versions are held at this point.
  let held: ReturnType<typeof gateway.versions.enter> | undefined = gateway.versions.enter();
  const outcome = await gateway.document.reload("bench");
  const reloadMs = Math.round(performance.now() - started);
  const both = settle();
  gateway.versions.leave(held);
  held = undefined;
  await new Promise((resolve) => setTimeout(resolve, 50));
  const after = settle();
  await gateway.close();
  return {
    document: name,
    bytes: JSON.stringify(document).length,
    operations: gateway.api.operations.length,
    result: outcome.result,
    reloadMs,
    rssMb: { baseline: baseline.rss, serving: before.rss, bothVersions: both.rss, afterReload: after.rss },
    heapMb: { serving: before.heap, bothVersions: both.heap, afterReload: after.heap },
  };
}

const operations = Number(process.argv[2] ?? 2000);
const petStore = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));
const results = [
  await measure("Pet Store", petStore, (d) => {
    d.info.version = "1.0.1";
  }),
  await measure(`generated, ${operations} operations`, manyOperationsDocument(operations), (d) => {
    d.info.version = "2";
  }),
];
console.log(JSON.stringify({ node: process.version, at: new Date().toISOString(), results }, null, 2));

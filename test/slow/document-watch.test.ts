// An owner edits the document in a Kubernetes ConfigMap: the kubelet writes the new files into a
// new folder and swaps the `..data` symlink, so no watched file's path ever changes. The gateway
// watches the folders, reads the files again, and serves the new version within seconds, without
// a restart and without a signal.
import assert from "node:assert/strict";
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { DEFAULT_OPENAPI_FILE } from "../../src/project-files.ts";
import { eventually } from "../support/eventually.ts";
import { startGatewayProgram, type TestGatewayProgram } from "../support/gateway.ts";
import { scrape } from "../support/metrics.ts";

/** A ConfigMap volume as the kubelet lays it out: name -> ..data/name, ..data -> ..<timestamp>. */
function configMapVolume(files: Readonly<Record<string, string>>): {
  readonly volume: string;
  update(files: Readonly<Record<string, string>>): void;
} {
  const volume = mkdtempSync(join(tmpdir(), "configmap-"));
  let generation = 0;
  let current: string | undefined;
  const writeVersion = (contents: Readonly<Record<string, string>>) => {
    const version = `..2026_11_26_07_00_0${generation++}.123456789`;
    mkdirSync(join(volume, version));
    for (const [name, text] of Object.entries(contents)) writeFileSync(join(volume, version, name), text);
    return version;
  };
  current = writeVersion(files);
  symlinkSync(current, join(volume, "..data"));
  for (const name of Object.keys(files)) symlinkSync(join("..data", name), join(volume, name));
  return {
    volume,
    update(contents) {
      // The kubelet's atomic writer: a new folder, ..data_tmp pointing at it renamed over ..data,
      // then the old folder removed.
      const next = writeVersion(contents);
      symlinkSync(next, join(volume, "..data_tmp"));
      renameSync(join(volume, "..data_tmp"), join(volume, "..data"));
      rmSync(join(volume, current as string), { recursive: true });
      current = next;
    },
  };
}

const PET_STORE = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));

let gw: TestGatewayProgram;
const map = configMapVolume({ "openapi.json": JSON.stringify(PET_STORE) });
before(async () => {
  gw = await startGatewayProgram({
    // The kubelet's swap is one burst: a short quiet time reads it once, as the default 500 ms does.
    config: { document: { reloadDebounceMs: 50 } },
    env: { OPENAPI_FILE: join(map.volume, "openapi.json") },
  });
});
after(() => gw.stop());

const servedVersion = async () =>
  (await scrape(gw)).filter((sample) => sample.name === "gateway_document_info").map((s) => s.labels.version);

test("a document updated in a ConfigMap-shaped folder is served within seconds, without a restart", async () => {
  assert.deepEqual(await servedVersion(), ["1.0.0"]);
  const next = structuredClone(PET_STORE);
  next.info.version = "1.1.0";
  next.paths["/pets"].get.parameters[0].schema.maximum = 200;
  map.update({ "openapi.json": JSON.stringify(next) });
  const line = await gw.waitFor((l) => l.msg === "document reloaded", 10_000);
  assert.equal(line.why, "file changed");
  await eventually("the new version is the one serving", async () => {
    assert.deepEqual(await servedVersion(), ["1.1.0"]);
    return true;
  });

  // Broken next: refused, and the version before keeps serving.
  map.update({ "openapi.json": "{ broken" });
  await gw.waitFor((l) => l.msg === "document reload refused; the running version keeps serving", 10_000);
  assert.deepEqual(await servedVersion(), ["1.1.0"]);
});

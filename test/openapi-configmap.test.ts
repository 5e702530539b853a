// A team's own document in Kubernetes: mounted from a ConfigMap as a directory, where the kubelet
// lays each file out as a symlink through `..data` into a timestamped folder. The loader refuses
// $refs that escape the document's folder by a symlink; a real mount must still load.
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { PROJECT_ROOT } from "./support/program.ts";

const OVERLAY = join(PROJECT_ROOT, "deploy/kubernetes/overlays/own-document");
const FILES = ["openapi.yaml", "schemas.yaml"];

/** The tree a kubelet makes for a ConfigMap volume: name -> ..data/name, ..data -> ..<timestamp>. */
function configMapVolume(files: readonly string[]): string {
  const volume = mkdtempSync(join(tmpdir(), "configmap-"));
  const version = "..2026_11_26_07_00_00.123456789";
  mkdirSync(join(volume, version));
  for (const file of files) copyFileSync(join(OVERLAY, file), join(volume, version, file));
  symlinkSync(version, join(volume, "..data"));
  for (const file of files) symlinkSync(join("..data", file), join(volume, file));
  return volume;
}

describe("the own-document overlay's files, mounted as a kubelet mounts a ConfigMap", () => {
  const keys = writeKeysFile(["acme"]);
  const { key } = keys;
  const volume = configMapVolume(FILES);
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ keys, config: { openapi: join(volume, "openapi.yaml") } });
  });
  after(() => gw.close());

  test("the mount is the kubelet's shape: each file a symlink through ..data", () => {
    assert.equal(
      realpathSync(join(volume, "schemas.yaml")),
      realpathSync(join(volume, "..2026_11_26_07_00_00.123456789/schemas.yaml")),
    );
  });

  test("the gateway starts on it, $refs across the two files resolved, and serves the document's operations", async () => {
    assert.equal(gw.gateway.api.title, "Pet Store (3.0, YAML)");
    const listed = await request(`${gw.url}/pets?limit=2`, { key });
    assert.equal(listed.status, 200);
    assert.equal(listed.json<unknown[]>().length, 2);
    // A schema that lives in schemas.yaml is enforced: PetStatus's enum refuses the value.
    const refused = await request(`${gw.url}/pets?status=lost`, { key });
    assert.equal(refused.status, 400);
  });
});

// A file as the kubelet mounts a Secret or a ConfigMap: the path is a symlink through `..data`,
// and an update swaps `..data` to a new timestamped directory in one rename.
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface SecretMount {
  /** The path a container reads: <mount>/<name>. */
  readonly file: string;
  /** The Secret updated: a new directory, ..data swapped to it, the old one removed. */
  update(text: string): void;
}

export function mountSecret(name: string, text: string): SecretMount {
  const mount = mkdtempSync(join(tmpdir(), "gw-secret-"));
  let version = 0;
  let current = "";
  const write = (content: string) => {
    const previous = current;
    current = `..2026_01_01_00_00_0${version}.${++version}`;
    mkdirSync(join(mount, current));
    writeFileSync(join(mount, current, name), content);
    symlinkSync(current, join(mount, "..data_tmp"));
    renameSync(join(mount, "..data_tmp"), join(mount, "..data"));
    if (previous !== "") rmSync(join(mount, previous), { recursive: true });
  };
  write(text);
  symlinkSync(join("..data", name), join(mount, name));
  return { file: join(mount, name), update: write };
}

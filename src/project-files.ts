// Where the project's own files are, so that the gateway finds its default config and OpenAPI
// description whatever the working directory.
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** The directory of package.json: the same from the sources (src/) and from the build (dist/src/). */
export const PROJECT_ROOT = projectRoot(import.meta.dirname);
export const DEFAULT_CONFIG_FILE = resolve(PROJECT_ROOT, "config/gateway.json");
export const DEFAULT_OPENAPI_FILE = resolve(PROJECT_ROOT, "config/openapi.json");

/**
 * A path a user typed to a command, from the directory they typed it in: npm runs a package's
 * scripts from its root, and says where the user was in INIT_CWD.
 */
export function fromUserDirectory(path: string): string {
  return resolve(process.env.INIT_CWD ?? process.cwd(), path);
}

function projectRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(resolve(dir, "package.json"))) return dir;
    if (dirname(dir) === dir)
      throw new Error(`no package.json above ${from}: the gateway runs from its project`);
  }
}

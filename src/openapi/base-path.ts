// The public base path of a document, read from its servers (or set in the gateway config).

import { withoutTrailingSlashes } from "../trailing-slashes.ts";
import { asObject, type Json, type JsonObject } from "./json-object.ts";

/**
 * The gateway config's base path, else the path every server URL shares ("" without servers).
 * Hosts are never read: the gateway answers on its own address, whatever the document's servers.
 */
export function basePathOf(servers: Json | undefined, configured: string | undefined): string {
  if (configured !== undefined) return withoutTrailingSlashes(configured);
  const urls = new Map<string, string>(); // path -> the first URL with it
  for (const [index, value] of (Array.isArray(servers) ? servers : []).entries()) {
    const server = asObject(value, `servers[${index}]`);
    if (typeof server?.url !== "string") throw new Error(`servers[${index}]: url is required`);
    const path = serverPath(server.url, asObject(server.variables, `servers[${index}].variables`) ?? {});
    if (path === undefined) throw new Error(`servers[${index}]: a variable of ${server.url} has no default`);
    if (!urls.has(path)) urls.set(path, server.url);
  }
  if (urls.size > 1) {
    const named = [...urls].map(([path, url]) => `${path || "/"} in ${url}`).join(", ");
    throw new Error(
      `servers disagree on the base path (${named}): set basePath in the gateway config to the one to serve`,
    );
  }
  return [...urls.keys()][0] ?? "";
}

/** The path of a server URL, its {variables} set to their defaults; undefined when one has none. */
function serverPath(url: string, variables: JsonObject): string | undefined {
  let unset = false;
  const expanded = url.replace(/\{([^{}]*)\}/g, (_whole, name: string) => {
    const variable = variables[name];
    const value =
      variable !== null && typeof variable === "object" && !Array.isArray(variable)
        ? variable.default
        : undefined;
    if (typeof value === "string") return value;
    unset = true;
    return "";
  });
  if (unset) return undefined;
  return withoutTrailingSlashes(new URL(expanded, "http://base.invalid").pathname);
}

// A wrong backend base path is the first mistake people make with UPSTREAM_URL (`http://pets/v1`
// in front of a backend that serves `/pets`): the gateway starts ready and every client gets the
// backend's 404. It is told passively, from answers the gateway forwards anyway, never by calling
// the backend itself: a 404 that the operation does not declare, or whose body is not the answer
// it declares for 404, is logged once as a warning naming UPSTREAM_URL and the likely fix.
import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "pino";
import { JSON_FAMILY_MEDIA_TYPE } from "../media-types.ts";
import type { Operation } from "../openapi.ts";
import { withoutTrailingSlashes } from "../trailing-slashes.ts";
import { shownUpstream } from "../upstream-choice.ts";
import type { HeldBody } from "./held-body.ts";

export interface BasePathHint {
  /**
   * Called with each backend answer's head, and its body when the gateway held it to judge it
   * (undefined otherwise: a body it did not read says nothing).
   */
  notice(
    operation: Operation,
    status: number,
    headers: IncomingHttpHeaders,
    body: HeldBody | undefined,
  ): void;
}

export function createBasePathHint(
  logger: Logger,
  upstreamUrl: string,
  publicBasePath: string,
): BasePathHint {
  const upstream = new URL(upstreamUrl);
  const shown = shownUpstream(upstreamUrl);
  const fix = likelyFix(upstream, publicBasePath);
  let told = false;
  return {
    notice(operation, status, headers, body) {
      if (status !== 404 || told) return;
      if (!isForeign404(operation, headers, body)) return;
      told = true;
      logger.warn(
        {
          warning: "upstream-base-path",
          operation: operation.id,
          upstream: shown,
          forwardedTo: `${shown}${operation.path}`,
          fix,
        },
        `the backend answered 404 to ${operation.method} ${operation.path} (${operation.id}) with an answer the document does not declare: is the base path of UPSTREAM_URL right? It replaces ${publicBasePath || "the public base path"}`,
      );
    },
  };
}

/** Not the operation's own 404: undeclared, not JSON, or JSON that fails the declared schema. */
function isForeign404(
  operation: Operation,
  headers: IncomingHttpHeaders,
  body: HeldBody | undefined,
): boolean {
  const declared = operation.responses.get("404") ?? operation.responses.get("4XX");
  if (declared === undefined) return true;
  if (!JSON_FAMILY_MEDIA_TYPE.test(headers["content-type"] ?? "")) return declared.validate !== undefined;
  if (body === undefined || declared.validate === undefined) return false;
  let value: unknown;
  try {
    value = JSON.parse(body.text());
  } catch {
    return true;
  }
  return !declared.validate(value);
}

/** The UPSTREAM_URL that differs from this one by the public base path: without it, or with it. */
function likelyFix(upstream: URL, publicBasePath: string): string | undefined {
  if (publicBasePath === "") return undefined;
  const path = withoutTrailingSlashes(upstream.pathname);
  if (path.endsWith(publicBasePath)) {
    const without = `${upstream.origin}${path.slice(0, -publicBasePath.length)}`;
    return `UPSTREAM_URL=${without} if the backend serves its paths without ${publicBasePath}`;
  }
  return `UPSTREAM_URL=${upstream.origin}${path}${publicBasePath} if the backend serves its paths under ${publicBasePath}`;
}

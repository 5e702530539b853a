// The request id the gateway logs on every line, echoes to the client and passes to the backend.
// A client's own X-Request-Id is kept, so that one id follows a call across systems, unless it
// is malformed (it would break log lines and headers) or it is a credential: an id is repeated
// where a key never may be.
import type { IncomingHttpHeaders } from "node:http";
import { credentialsOf } from "../redaction.ts";

/** A client's X-Request-Id that the gateway keeps (any other is replaced). */
const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The client's X-Request-Id when it is well-formed (one, short, of plain characters); else undefined. */
export function clientRequestId(headers: IncomingHttpHeaders): string | undefined {
  const value = headers["x-request-id"];
  return typeof value === "string" && REQUEST_ID.test(value) ? value : undefined;
}

/**
 * Whether a client's request id is a credential: the request's own key (see isOwnCredential) or
 * one that a policy knows (its recognizesCredential).
 */
export function isCredentialAsId(
  requestId: string,
  authorization: string | undefined,
  isCredential: (value: string) => boolean,
): boolean {
  return isOwnCredential(requestId, authorization) || isCredential(requestId);
}

/**
 * A request id that repeats the request's own key (or a part of it that long) would log the key,
 * and so would one that holds it ("<key>-retry-2").
 */
export function isOwnCredential(requestId: string, authorization: string | undefined): boolean {
  if (authorization === undefined) return false;
  if (requestId.length >= 8 && authorization.includes(requestId)) return true;
  for (const part of credentialsOf(authorization)) if (requestId.includes(part)) return true;
  return false;
}

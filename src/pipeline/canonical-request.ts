// Is this request well-formed HTTP that the gateway will judge? The one reading of a request's
// head and target that every port of the process uses, the ops port included: what it refuses
// is refused alike everywhere, and no client text ever reaches a parser that throws (new URL()).
// Also what of a request's headers never crosses the gateway, and the query written back.
import type { IncomingHttpHeaders } from "node:http";
import { isIPv4, isIPv6 } from "node:net";
import { type GatewayError, gatewayError } from "../errors.ts";
import { quotedClientText } from "../redaction.ts";

/**
 * A path that is not canonical: the path the policies judge must be the path the backend gets, so
 * no percent-encoding, no backslash, no ';' parameters, no empty or dot segments, no control
 * characters.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
const NON_CANONICAL_PATH = /[%\\;\u0000-\u0020\u007f]|\/\/|\/\.\.?(?:\/|$)/;

/** What the reading needs of a request: its head, as Node's parser gave it. */
export interface RequestHead {
  readonly url?: string | undefined;
  readonly httpVersionMajor: number;
  readonly httpVersionMinor: number;
  readonly rawHeaders: readonly string[];
  readonly headers: IncomingHttpHeaders;
}

export type CanonicalTarget =
  | {
      readonly refusal: undefined;
      /** Origin-form, canonical: what the policies judge is what the backend gets. */
      readonly path: string;
      /** After the first '?', as sent (parseQuery reads it). */
      readonly rawQuery: string;
    }
  | {
      readonly refusal: GatewayError;
      /** The framing itself is in doubt: nothing more may be read from the connection. */
      readonly closeConnection: boolean;
    };

/**
 * The request's path and query, or why it is refused. Only origin-form targets are read: an
 * absolute-form target (`GET http://host/v1/pets`), the asterisk and anything else that does not
 * start with '/' is refused with BAD_PATH (see "One canonical path" in docs/security.md).
 */
export function canonicalTarget(req: RequestHead): CanonicalTarget {
  const framing = framingProblem(req);
  if (framing !== undefined) return { refusal: gatewayError("BAD_REQUEST", framing), closeConnection: true };
  const url = req.url ?? "";
  const queryStart = url.indexOf("?");
  const path = queryStart === -1 ? url : url.slice(0, queryStart);
  if (!path.startsWith("/") || NON_CANONICAL_PATH.test(path))
    return { refusal: gatewayError("BAD_PATH"), closeConnection: false };
  return { refusal: undefined, path, rawQuery: queryStart === -1 ? "" : url.slice(queryStart + 1) };
}

/**
 * What Node's parser lets through but a gateway must not (RFC 9112): versions other than 1.0
 * and 1.1, a missing or repeated Host, any Transfer-Encoding on HTTP/1.0, and a transfer coding
 * other than chunked, which would leave the gateway and the backend reading different bodies.
 */
function framingProblem(req: RequestHead): string | undefined {
  if (req.httpVersionMajor !== 1 || req.httpVersionMinor > 1) return "Only HTTP/1.0 and HTTP/1.1 are served";
  let hosts = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === "host") hosts++;
  }
  if (hosts > 1) return "The request has more than one Host header";
  if (hosts === 0 && req.httpVersionMinor === 1) return "The request has no Host header";
  // It goes on as X-Forwarded-Host, which backends put in links and redirects.
  if (hosts === 1 && !isValidHost(req.headers.host ?? ""))
    return "The Host header is not an IP address or a DNS name with an optional port";
  const coding = req.headers["transfer-encoding"];
  if (coding !== undefined) {
    // RFC 9112 §6.1: a chunked body is not HTTP/1.0; Node would pass it on.
    if (req.httpVersionMinor === 0) return "Transfer-Encoding is not allowed in HTTP/1.0";
    if (coding.toLowerCase() !== "chunked") return "Transfer-Encoding other than chunked is not supported";
  }
  return undefined;
}

/**
 * Fills `into` with the query, name -> value; or says why it is refused: a name given twice (the
 * backend might read the other one) or percent-encoding that does not decode.
 */
export function parseQuery(raw: string, into: Map<string, string>): GatewayError | undefined {
  const duplicate = fillQuery(raw, into);
  if (duplicate === undefined) return undefined;
  return duplicate === ""
    ? gatewayError("BAD_REQUEST", "The query string is not valid percent-encoding")
    : gatewayError(
        "DUPLICATE_PARAMETER",
        `query parameter ${quotedClientText(duplicate)} is given more than once`,
      );
}

/** Fills query; returns the name of a duplicated parameter, "" for bad encoding, undefined when fine. */
function fillQuery(raw: string, into: Map<string, string>): string | undefined {
  if (raw === "") return undefined;
  for (const pair of raw.split("&")) {
    if (pair === "") continue;
    const equals = pair.indexOf("=");
    let name: string;
    let value: string;
    try {
      name = decodeQueryComponent(equals === -1 ? pair : pair.slice(0, equals));
      value = equals === -1 ? "" : decodeQueryComponent(pair.slice(equals + 1));
    } catch {
      return "";
    }
    if (into.has(name)) return name;
    into.set(name, value);
  }
  return undefined;
}

function decodeQueryComponent(text: string): string {
  const spaced = text.includes("+") ? text.replaceAll("+", " ") : text;
  return spaced.includes("%") ? decodeURIComponent(spaced) : spaced;
}

/** The query as the backend gets it once a policy changed it: every name and value percent-encoded. */
export function serializeQuery(query: ReadonlyMap<string, string>): string {
  let out = "";
  for (const [name, value] of query) {
    out += `${out === "" ? "" : "&"}${encodeURIComponent(name)}=${encodeURIComponent(value)}`;
  }
  return out;
}

// Hop-by-hop headers (RFC 9110 §7.6.1) never cross the gateway, in either direction.
export const HOP_BY_HOP: readonly string[] = [
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
];
const HOP_BY_HOP_SET: ReadonlySet<string> = new Set(HOP_BY_HOP);
// Headers that would let a client change what the backend believes about the request.
export const SPOOFABLE: readonly string[] = [
  "forwarded",
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
  "x-original-url",
  "x-rewrite-url",
  // The gateway has read the whole body already; an expectation is between the client and it.
  "expect",
];

export function isHopByHop(name: string): boolean {
  return HOP_BY_HOP_SET.has(name);
}

/**
 * Removes the client's hop-by-hop headers, those its Connection header lists, and the spoofable
 * ones. Run before any policy, so that a Connection header can never remove what a policy sets for
 * the backend (the consumer, its credential). Transfer-Encoding stays until forwarding (see
 * dropHopByHop): it tells the policies a body is coming.
 */
export function scrubRequestHeaders(headers: IncomingHttpHeaders): void {
  for (const name of connectionListed(headers.connection)) {
    if (name !== "transfer-encoding" && headers[name] !== undefined) delete headers[name];
  }
  // Most of these are absent: looking first spares a delete, which is slow in itself and turns
  // the object into a slower dictionary for every later header access.
  for (const name of HOP_BY_HOP) {
    if (name !== "transfer-encoding" && headers[name] !== undefined) delete headers[name];
  }
  for (const name of SPOOFABLE) if (headers[name] !== undefined) delete headers[name];
}

/** The hop-by-hop headers still there (Transfer-Encoding, or what a policy set) go before forwarding. */
export function dropHopByHop(headers: IncomingHttpHeaders): void {
  for (const name of HOP_BY_HOP) if (headers[name] !== undefined) delete headers[name];
}

const NOTHING_LISTED: readonly string[] = [];
/** Header names a Connection header lists, except what the gateway itself relies on. */
export function connectionListed(connection: unknown): readonly string[] {
  if (typeof connection !== "string") return NOTHING_LISTED;
  const names: string[] = [];
  for (const name of connection.split(",")) {
    const trimmed = name.trim().toLowerCase();
    // Never let Connection remove what the gateway itself relies on.
    if (trimmed !== "" && trimmed !== "content-length" && trimmed !== "host") names.push(trimmed);
  }
  return names;
}

/** Longest Host value the rules below can accept: a 253-character name and ":65535". */
const MAX_HOST_LENGTH = 253 + 6;
const MAX_LABEL_LENGTH = 63;

/**
 * Whether a Host header names an authority the gateway may pass on (as X-Forwarded-Host): an IPv4
 * address, an [IPv6] literal, or a DNS name of letters, digits, "-", "_" and "." (labels of at most
 * 63 characters, 253 in all, one trailing dot allowed), each with an optional port 1-65535. One
 * scan, no regular expression; anything else is refused before any policy sees the request.
 */
export function isValidHost(value: string): boolean {
  if (value.length === 0 || value.length > MAX_HOST_LENGTH + 2) return false;
  if (value.charCodeAt(0) === 0x5b /* [ */) {
    const close = value.indexOf("]");
    if (close === -1 || !isIPv6(value.slice(1, close))) return false;
    return close === value.length - 1 || (value[close + 1] === ":" && isPort(value.slice(close + 2)));
  }
  const colon = value.indexOf(":");
  const name = colon === -1 ? value : value.slice(0, colon);
  if (colon !== -1 && !isPort(value.slice(colon + 1))) return false;
  return isIPv4(name) || isDnsName(name);
}

function isPort(text: string): boolean {
  if (text.length === 0 || text.length > 5) return false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x30 || code > 0x39) return false;
  }
  const port = Number(text);
  return port >= 1 && port <= 65_535;
}

function isDnsName(name: string): boolean {
  const length = name.endsWith(".") ? name.length - 1 : name.length;
  if (length === 0 || length > 253) return false;
  let label = 0;
  for (let index = 0; index < length; index++) {
    const code = name.charCodeAt(index);
    if (code === 0x2e /* . */) {
      if (label === 0) return false;
      label = 0;
      continue;
    }
    if (!isNameChar(code) || ++label > MAX_LABEL_LENGTH) return false;
  }
  return label > 0;
}

// A-Z a-z 0-9 - _
function isNameChar(code: number): boolean {
  return (
    (code >= 0x61 && code <= 0x7a) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x30 && code <= 0x39) ||
    code === 0x2d ||
    code === 0x5f
  );
}

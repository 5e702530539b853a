// nginx's auth_request passes on only 2xx, 401 and 403, and never a body. So the nginx door says
// every refusal (and a CORS preflight's 204) as 403 carrying the real answer in one header, and
// nginx's `error_page 401 403 = @deny` hands that header to the render endpoint, which writes the
// answer as it is: status, headers, Error body. The render endpoint is stateless and counts
// nothing: the decision was counted and logged once already.
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import { errorBody, gatewayError } from "../errors.ts";
import { isHopByHop } from "../pipeline/canonical-request.ts";
import type { CoreExchange } from "../pipeline/exchange.ts";

/** The header of the 403 that carries the answer: base64 of {status, headers, body}. */
export const CARRIED_ANSWER_HEADER = "x-gateway-deny";

interface Carried {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** The nginx door's answer writer: a 403 whose header holds what the client must see. */
export function carryAnswer(
  exchange: CoreExchange,
  status: number,
  headers: OutgoingHttpHeaders,
  body: string | undefined,
): void {
  exchange.carriedStatus = status;
  const kept: Record<string, string> = {};
  for (const name in headers) {
    const value = headers[name];
    // The render endpoint frames the answer itself; nothing of the decision's own hop goes on.
    if (value === undefined || name === "content-length" || isHopByHop(name)) continue;
    kept[name] = Array.isArray(value) ? value.join(", ") : String(value);
  }
  const carried: Carried = { status, headers: kept, body: body ?? "" };
  exchange.res.writeHead(403, {
    [CARRIED_ANSWER_HEADER]: Buffer.from(JSON.stringify(carried)).toString("base64"),
    "content-length": 0,
    "cache-control": "no-store",
    // Only for the decision's connection (a drain, a framing refusal).
    ...(headers.connection === "close" ? { connection: "close" } : {}),
  });
  exchange.res.end();
}

const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;
const RENDER_FAILED = gatewayError("INTERNAL_ERROR");

/**
 * Writes the answer a 403 of the nginx door carried, as it is; a header that is missing or not
 * one the door wrote (the proxy is misconfigured, or someone other than the proxy calls) is
 * answered 500: the client never gets a success it was not given.
 */
export function renderCarried(value: string | string[] | undefined, res: ServerResponse): void {
  const carried = typeof value === "string" ? decode(value) : undefined;
  if (carried === undefined) {
    const body = errorBody(RENDER_FAILED);
    res.writeHead(RENDER_FAILED.status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    });
    res.end(body);
    return;
  }
  res.writeHead(carried.status, { ...carried.headers, "content-length": Buffer.byteLength(carried.body) });
  res.end(carried.body);
}

function decode(value: string): Carried | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(value, "base64").toString("utf8"));
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== "object") return undefined;
  const { status, headers, body } = parsed as Partial<Carried>;
  // Only what a refusal or a local answer can be: never a success the backend would have given.
  if (typeof status !== "number" || !Number.isInteger(status) || status < 204 || status > 599)
    return undefined;
  if (status >= 205 && status < 400) return undefined;
  if (typeof body !== "string" || headers === null || typeof headers !== "object") return undefined;
  const kept: Record<string, string> = {};
  for (const [name, text] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name) || typeof text !== "string" || !HEADER_VALUE.test(text)) return undefined;
    if (name === "content-length" || isHopByHop(name)) return undefined;
    kept[name] = text;
  }
  return { status, headers: kept, body };
}

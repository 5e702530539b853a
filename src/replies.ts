// The security headers of every answer the process writes, and the writers of the answers it
// writes itself, in one room: the public port's refusals (src/pipeline/local-replies.ts), the
// proxied answers (finishHeaders), the raw answers written straight to a socket (a parser's
// refusal, a cluster primary with no worker), the ops port's endpoints and refusals, and the
// policies' reports. A second copy of these headers is where one goes missing: the ops port's
// own writers once sent neither.
import http, { type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import { errorBody, type GatewayError } from "./errors.ts";

/** Every answer, the backend's included: a browser never reads a JSON body as HTML or script. */
export function withNosniff(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  headers["x-content-type-options"] = "nosniff";
  return headers;
}

/**
 * An answer the gateway writes itself (an error, a report, the metrics): never sniffed, and never
 * kept by a cache, since it says what holds now (a refusal, readiness) or names consumers.
 */
export function ownAnswerHeaders(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  headers["cache-control"] = "no-store";
  return withNosniff(headers);
}

/**
 * Marks a response as the gateway's own before a handler writes it: whatever the handler's
 * writeHead says besides, these two go out (the ops port calls it first, so a policy's report
 * renderer cannot leave them out).
 */
export function markOwnAnswer(res: ServerResponse): void {
  res.setHeader("cache-control", "no-store");
  res.setHeader("x-content-type-options", "nosniff");
}

/** A whole answer of the gateway's own: status, headers (the security ones added), body. */
export function sendOwnAnswer(
  res: ServerResponse,
  status: number,
  headers: OutgoingHttpHeaders,
  body: string,
): void {
  res.writeHead(status, ownAnswerHeaders({ ...headers, "content-length": Buffer.byteLength(body) }));
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  sendOwnAnswer(res, status, { "content-type": "application/json" }, JSON.stringify(value));
}

/**
 * An error of the catalogue outside the pipeline (the ops port, a report's refusal): its body is
 * the interface's Error object, as on the public port.
 */
export function sendError(res: ServerResponse, error: GatewayError, closeConnection = false): void {
  sendOwnAnswer(
    res,
    error.status,
    {
      ...error.headers,
      ...(closeConnection && { connection: "close" }),
      "content-type": "application/json",
    },
    errorBody(error),
  );
}

/** The bytes of an answer written straight to a socket: the Error object, and Connection: close. */
export function rawAnswer(reply: GatewayError, requestId?: string): string {
  const body = errorBody(reply);
  const headers: OutgoingHttpHeaders = ownAnswerHeaders({
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  if (requestId !== undefined) headers["x-request-id"] = requestId;
  headers.connection = "close";
  let head = `HTTP/1.1 ${reply.status} ${http.STATUS_CODES[reply.status]}\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${RAW_NAMES[name] ?? name}: ${value}\r\n`;
  return `${head}\r\n${body}`;
}

/** The header names as a raw answer spells them (as Node's own writer would keep them, in case). */
const RAW_NAMES: Readonly<Record<string, string>> = {
  "content-type": "Content-Type",
  "content-length": "Content-Length",
  "cache-control": "Cache-Control",
  "x-content-type-options": "X-Content-Type-Options",
  "x-request-id": "X-Request-Id",
  connection: "Connection",
};

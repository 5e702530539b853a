// The catalogue of every error the gateway itself answers with. Each entry has a stable code
// (the interface leaves the set of codes open), its HTTP status, the rejection reason used as a
// bounded metric label, and a default message. Every body is the interface's Error object.

export interface CatalogueEntry {
  readonly status: number;
  readonly reason: RejectionReason;
  readonly message: string;
}

export type RejectionReason =
  | "request" // malformed or non-canonical request, before routing
  | "routing"
  | "auth"
  | "lifecycle"
  | "validation"
  | "upstream"
  | "contract"
  | "internal";

export const errorCatalogue = {
  BAD_REQUEST: { status: 400, reason: "request", message: "The request is not valid HTTP/1.1" },
  BAD_PATH: { status: 400, reason: "request", message: "The request path is not in canonical form" },
  DUPLICATE_PARAMETER: {
    status: 400,
    reason: "request",
    message: "A query parameter is given more than once",
  },
  REQUEST_TIMEOUT: { status: 408, reason: "request", message: "The request did not arrive in time" },
  NOT_IMPLEMENTED: {
    status: 501,
    reason: "request",
    message: "The request method is not one the gateway implements",
  },
  HEADERS_TOO_LARGE: { status: 431, reason: "request", message: "The request headers are too large" },
  NOT_FOUND: { status: 404, reason: "routing", message: "No operation of the interface has this path" },
  METHOD_NOT_ALLOWED: {
    status: 405,
    reason: "routing",
    message: "The operation does not exist for this method",
  },
  MISSING_API_KEY: { status: 401, reason: "auth", message: "A bearer API key is required" },
  INVALID_API_KEY: { status: 401, reason: "auth", message: "The API key is not valid" },
  OPERATION_SUNSET: { status: 410, reason: "lifecycle", message: "The operation has been removed" },
  OPERATION_BROWNOUT: {
    status: 410,
    reason: "lifecycle",
    message: "The operation is deprecated and temporarily unavailable (brownout)",
  },
  OPERATION_NOT_AVAILABLE: {
    status: 403,
    reason: "lifecycle",
    message: "The operation is experimental and not available in this environment",
  },
  INVALID_PARAMETER: { status: 400, reason: "validation", message: "A parameter is not valid" },
  UNKNOWN_PARAMETER: {
    status: 400,
    reason: "validation",
    message: "A query parameter is not part of the operation",
  },
  BODY_NOT_ALLOWED: { status: 400, reason: "validation", message: "The operation takes no request body" },
  MALFORMED_JSON: { status: 400, reason: "validation", message: "The request body is not valid JSON" },
  INVALID_BODY: { status: 400, reason: "validation", message: "The request body does not match the schema" },
  PAYLOAD_TOO_LARGE: { status: 413, reason: "validation", message: "The request body is too large" },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    reason: "validation",
    message: "The request body must be application/json",
  },
  UPSTREAM_UNAVAILABLE: {
    status: 502,
    reason: "upstream",
    message: "The backend could not be reached or failed",
  },
  UPSTREAM_TIMEOUT: { status: 504, reason: "upstream", message: "The backend did not answer in time" },
  UPSTREAM_CONTRACT_VIOLATION: {
    status: 502,
    reason: "contract",
    message: "The backend answered outside the interface contract",
  },
  SHUTTING_DOWN: { status: 503, reason: "internal", message: "The gateway is shutting down" },
  INTERNAL_ERROR: { status: 500, reason: "internal", message: "The gateway failed to handle the request" },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof errorCatalogue;

/** A reply that stops the chain: what a policy phase or the core returns to reject a request. */
export interface GatewayError {
  readonly code: ErrorCode;
  readonly status: number;
  readonly reason: RejectionReason;
  readonly message: string;
  readonly headers: Readonly<Record<string, string>> | undefined;
}

export function gatewayError(
  code: ErrorCode,
  message?: string,
  headers?: Readonly<Record<string, string>>,
): GatewayError {
  const entry: CatalogueEntry = errorCatalogue[code];
  return { code, status: entry.status, reason: entry.reason, message: message ?? entry.message, headers };
}

export function errorBody(error: GatewayError): string {
  return JSON.stringify({ code: error.code, message: error.message, status: error.status });
}

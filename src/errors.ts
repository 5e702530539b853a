// The core's part of the catalogue of every error the gateway itself answers with. Each entry has
// a stable code (the interface leaves the set of codes open), its HTTP status, the rejection
// reason used as a bounded metric label, and a default message. Every body is the interface's
// Error object. Policies declare their own codes (declareErrors); catalogueOf() joins them into
// the one table users read.

/** What a policy declares per code: the reason is the policy's, one for all its codes. */
export interface ErrorSpec {
  readonly status: number;
  readonly message: string;
}

export interface CatalogueEntry extends ErrorSpec {
  /** A bounded metric label value: the core's, or the one reason a policy declares. */
  readonly reason: string;
}

/** The reasons of the core's own refusals; a policy declares its own (e.g. "auth"). */
export type CoreReason =
  | "request" // malformed or non-canonical request, before routing
  | "routing"
  | "validation"
  | "upstream"
  | "ops" // the ops port's token
  | "internal";

export const coreCatalogue = {
  BAD_REQUEST: { status: 400, reason: "request", message: "The request is not valid HTTP/1.1" },
  BAD_PATH: { status: 400, reason: "request", message: "The request path is not in canonical form" },
  DUPLICATE_PARAMETER: {
    status: 400,
    reason: "request",
    message: "A query parameter is given more than once",
  },
  REQUEST_TIMEOUT: { status: 408, reason: "request", message: "The request did not arrive in time" },
  // Never sent: the connection is cut, and the access line says 499.
  SEND_TIMEOUT: { status: 499, reason: "request", message: "The client did not read the answer in time" },
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
  // The core reads and caps the body; request validation judges what it holds, under the same reason.
  PAYLOAD_TOO_LARGE: { status: 413, reason: "validation", message: "The request body is too large" },
  UPSTREAM_UNAVAILABLE: {
    status: 502,
    reason: "upstream",
    message: "The backend could not be reached or failed",
  },
  UPSTREAM_TIMEOUT: { status: 504, reason: "upstream", message: "The backend did not answer in time" },
  SHUTTING_DOWN: { status: 503, reason: "internal", message: "The gateway is shutting down" },
  // Written by a cluster primary itself, while none of its workers is serving (all died and are
  // being restarted): the port stays open and the client hears why.
  WORKER_UNAVAILABLE: {
    status: 503,
    reason: "internal",
    message: "No worker process of the gateway is serving; try again shortly",
  },
  // Never written by the gateway: a generated proxy config answers it when the gateway in decision
  // mode could not be asked, was too slow or answered what the proxy cannot use (src/decision/).
  DECISION_UNAVAILABLE: {
    status: 503,
    reason: "internal",
    message: "The gateway's decision service could not decide on the request",
  },
  GATEWAY_BUSY: {
    status: 503,
    reason: "internal",
    message: "The gateway holds as many answers as it may; try again shortly",
  },
  // The ops port's own (opsTokenFile): every path but /healthz and /readyz, when a token is set.
  MISSING_OPS_TOKEN: {
    status: 401,
    reason: "ops",
    message: "This ops endpoint needs the ops token: Authorization: Bearer <token>",
  },
  INVALID_OPS_TOKEN: { status: 401, reason: "ops", message: "The ops token is not valid" },
  INTERNAL_ERROR: { status: 500, reason: "internal", message: "The gateway failed to handle the request" },
} as const satisfies Record<string, CatalogueEntry & { readonly reason: CoreReason }>;

/** The codes the core answers with; a policy's codes are typed by its own declaration. */
export type ErrorCode = keyof typeof coreCatalogue;

/** A reply that stops the chain: what a policy phase or the core returns to reject a request. */
export interface GatewayError {
  readonly code: string;
  readonly status: number;
  readonly reason: string;
  readonly message: string;
  readonly headers: Readonly<Record<string, string>> | undefined;
}

function errorOf(
  code: string,
  entry: CatalogueEntry,
  message: string | undefined,
  headers: Readonly<Record<string, string>> | undefined,
): GatewayError {
  return { code, status: entry.status, reason: entry.reason, message: message ?? entry.message, headers };
}

/** One of the core's errors. */
export function gatewayError(
  code: ErrorCode,
  message?: string,
  headers?: Readonly<Record<string, string>>,
): GatewayError {
  return errorOf(code, coreCatalogue[code], message, headers);
}

/**
 * The backend's deadline passed before its answer's head: proxy mode's answer, and the one a
 * generated proxy config writes for its own backend timeout (src/decision/nginx-config.ts).
 */
export function upstreamTimeoutError(timeoutMs: number): GatewayError {
  return gatewayError("UPSTREAM_TIMEOUT", `The backend did not answer within ${timeoutMs} ms`);
}

/** A policy's declared reason and codes, with a maker bound to exactly those codes. */
export interface PolicyErrors<Code extends string = string> {
  readonly reason: string;
  readonly codes: Readonly<Record<Code, ErrorSpec>>;
  error(code: Code, message?: string, headers?: Readonly<Record<string, string>>): GatewayError;
}

/**
 * Declares a policy's rejection reason and error codes: `const errors = declareErrors("auth",
 * { MISSING_API_KEY: { status: 401, message: "..." } })`, then `errors.error("MISSING_API_KEY")`;
 * a code the policy did not declare does not compile.
 */
export function declareErrors<const Code extends string>(
  reason: string,
  codes: Readonly<Record<Code, ErrorSpec>>,
): PolicyErrors<Code> {
  return {
    reason,
    codes,
    error: (code, message, headers) => errorOf(code, { ...codes[code], reason }, message, headers),
  };
}

/**
 * The one catalogue: the core's codes and every policy's. A code means one thing: two policies
 * may declare the same code (limit and request validation both refuse an invalid parameter) only
 * with the same status, reason and message, and none may redefine a core code.
 */
export function catalogueOf(
  policies: readonly { readonly name: string; readonly errors?: PolicyErrors | undefined }[],
): Readonly<Record<string, CatalogueEntry>> {
  const catalogue: Record<string, CatalogueEntry> = { ...coreCatalogue };
  const owner = new Map<string, string>(Object.keys(coreCatalogue).map((code) => [code, "the core"]));
  for (const policy of policies) {
    if (!policy.errors) continue;
    const { reason } = policy.errors;
    for (const [code, spec] of Object.entries<ErrorSpec>(policy.errors.codes)) {
      const entry: CatalogueEntry = { status: spec.status, reason, message: spec.message };
      const known = catalogue[code];
      if (
        known !== undefined &&
        (owner.get(code) === "the core" ||
          known.status !== entry.status ||
          known.reason !== entry.reason ||
          known.message !== entry.message)
      ) {
        throw new Error(
          `policy ${policy.name} declares error code ${code}, which ${owner.get(code)} declares differently`,
        );
      }
      catalogue[code] = entry;
      if (!owner.has(code)) owner.set(code, `policy ${policy.name}`);
    }
  }
  return Object.freeze(catalogue);
}

/** The Error object's JSON; message replaces the error's own (a redacted copy of it). */
export function errorBody(error: GatewayError, message = error.message): string {
  return JSON.stringify({ code: error.code, message, status: error.status });
}

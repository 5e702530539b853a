// Every attribute the gateway puts on a span, with what it holds: the tracing module sets them by
// these names, and docs/reference/tracing.md is generated from this table (npm run docs), so that
// a name cannot change without its page. OpenTelemetry's HTTP conventions where one fits; the
// gateway's own facts under `gateway.`.
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_QUERY,
} from "@opentelemetry/semantic-conventions";

export const OPERATION_ID = "gateway.operation_id";
export const CONSUMER = "gateway.consumer";
export const REFUSAL_CODE = "gateway.refusal.code";
export const REFUSAL_REASON = "gateway.refusal.reason";
export const DEPRECATED = "gateway.deprecated";
/** Decision mode's facts of the access line (src/decision/index.ts writes them), as gateway.<fact>. */
export const DECIDED_FOR = "gateway.decided_for";
export const DECISION = "gateway.decision";
/** Each note a policy wrote for the access line, as gateway.note.<name> (attributeNameOf). */
export const NOTE_PREFIX = "gateway.note.";
/** Each fact of the core's for the access line, as gateway.<fact> (attributeNameOf). */
export const FACT_PREFIX = "gateway.";

// The access line's field names are camelCase (`daysToSunset`); OpenTelemetry's attribute naming
// asks for snake_case in each part of a name (`gateway.note.days_to_sunset`), which is what a
// collector's users search by. A note's name can come from the document (a page-size parameter's
// own name), so the cache is bounded; past it a name is converted each time.
const MAX_CACHED_NAMES = 256;
const snakeNames = new Map<string, string>();

/** An access line's fact or note name as a span attribute's last part: `daysToSunset` → `days_to_sunset`. */
export function attributeNameOf(accessLineName: string): string {
  const cached = snakeNames.get(accessLineName);
  if (cached !== undefined) return cached;
  let name = "";
  for (const char of accessLineName) {
    const lower = char.toLowerCase();
    name += lower !== char && name !== "" && !name.endsWith("_") ? `_${lower}` : lower;
  }
  if (snakeNames.size < MAX_CACHED_NAMES) snakeNames.set(accessLineName, name);
  return name;
}

export interface AttributeRow {
  /** The attribute's name; `<name>` in it stands for each of `names`. */
  readonly name: string;
  readonly value: string;
  /** What `<name>` stands for, where the gateway knows every one (the bundled policies' notes, the core's facts). */
  readonly names?: readonly string[];
}

/** The notes the bundled policies write (each policy's page says when). */
const NOTES = [
  "authFailure",
  "keyConsumer",
  "keyDigest",
  "limitAdjusted",
  "limitRequested",
  "contractViolation",
  "contractViolations",
  "contractJudged",
  "stability",
  "daysToSunset",
];
/** The core's facts of a request it proxies (the access line has them beside its own fields). */
const FACTS = [
  "upstreamFault",
  "aborted",
  "cutAtDeadline",
  "localReply",
  "policyFailed",
  "requestIdReplaced",
  "traceparentDropped",
];

export const SERVER_SPAN_ATTRIBUTES: readonly AttributeRow[] = [
  {
    name: ATTR_HTTP_REQUEST_METHOD,
    value: "The request's method (in decision mode, the original request's, as the proxy reported it).",
  },
  {
    name: ATTR_HTTP_ROUTE,
    value:
      "The document's path template with the public base path (`/v1/pets/{petId}`); absent when no operation matched.",
  },
  {
    name: ATTR_URL_PATH,
    value:
      "The request's path as the access line logs it: a key anywhere in it is replaced by `[redacted]`, then it is cut at 256 characters. In decision mode, the original request's path, not the door's `/decide/<proxy>`.",
  },
  {
    name: ATTR_URL_QUERY,
    value:
      "The query as the access line logs it (a credential-named parameter's value and any key `[redacted]`); absent without one.",
  },
  {
    name: ATTR_HTTP_RESPONSE_STATUS_CODE,
    value:
      "The status the client got (the access line's `status`). In decision mode, the verdict's: 200 for an allow (the backend's status is on the proxy's spans), else the status the client gets; through nginx, the real one the 403 carried, not the 403.",
  },
  {
    name: ATTR_SERVER_ADDRESS,
    value:
      "The `Host` the client asked for, without its port, redacted. In decision mode, the `Host` of the decision call as the proxy sent it (Envoy copies the client's; nginx's generated config sends its upstream's name, `gateway_decision`).",
  },
  {
    name: ATTR_CLIENT_ADDRESS,
    value:
      "The client's address (behind trusted proxies, the nearest untrusted `X-Forwarded-For` hop; in decision mode, the address the proxy set, believed from a trusted proxy only).",
  },
  {
    name: ATTR_ERROR_TYPE,
    value: "On a 5xx only: the gateway's error code, else the status. The span's status is then error.",
  },
  { name: OPERATION_ID, value: "The `operationId` the router matched; absent when none did." },
  { name: CONSUMER, value: "The authenticated consumer's name, from the key file (never the key)." },
  {
    name: REFUSAL_CODE,
    value: "The error code of an answer the gateway gave itself (`INVALID_API_KEY`, `UPSTREAM_TIMEOUT`, …).",
  },
  {
    name: REFUSAL_REASON,
    value: "Its reason, as the `reason` label of `gateway_rejections_total` (`auth`, `upstream`, …).",
  },
  { name: DEPRECATED, value: "`true` on an operation the document marks `deprecated: true`." },
  {
    name: DECIDED_FOR,
    value:
      "Decision mode: the proxy whose door was called (`nginx`, `envoy`, `caddy`, `traefik`, `haproxy`), on every decision's span; absent in proxy mode.",
  },
  {
    name: DECISION,
    value:
      "Decision mode: `allow` when the request may go on to the backend; a refused one has `gateway.refusal.code`.",
  },
  {
    name: `${NOTE_PREFIX}<name>`,
    value:
      "Each note a policy wrote on the access line (`notes.<name>`, [logs](../logs.md)), its name in snake_case (`notes.daysToSunset` is `gateway.note.days_to_sunset`): `days_to_sunset` (lifecycle: whole days to a deprecated operation's sunset, 0 or less once it has passed), `stability` (lifecycle: `experimental` or `beta`), `limit_adjusted` and `limit_requested` (limit: `defaulted`, `clamped_to_minimum` or `clamped_to_maximum`, and the value sent; another page size under its own name, `per_page_adjusted`), `contract_violation`, `contract_violations` and `contract_judged` (response contract: the first rule broken, how many, `false` for an answer its sample left unjudged), `auth_failure`, `key_consumer` and `key_digest` (auth: why a key was refused; an expired key's consumer and the first 8 hex digits of its digest).",
    names: NOTES.map(attributeNameOf),
  },
  {
    name: `${FACT_PREFIX}<fact>`,
    value:
      "Each of the core's facts of the access line, its name in snake_case: `upstream_fault` (what went wrong with the backend), `aborted` (the answer was cut), `cut_at_deadline` (by the shutdown deadline), `local_reply`, `policy_failed` (a policy threw: its name and phase), `request_id_replaced` and `traceparent_dropped` (`credential`: the client's request id, or its `traceparent`'s ids, held a key).",
    names: FACTS.map(attributeNameOf),
  },
];

export const CLIENT_SPAN_ATTRIBUTES: readonly AttributeRow[] = [
  { name: ATTR_HTTP_REQUEST_METHOD, value: "The method." },
  { name: ATTR_SERVER_ADDRESS, value: "The backend's host (`UPSTREAM_URL`'s)." },
  { name: ATTR_SERVER_PORT, value: "The backend's port." },
  {
    name: ATTR_URL_FULL,
    value:
      "The backend URL of the call, redacted as `url.path`: the query is the one the backend got (the `limit` applied, when the gateway defaulted or clamped it).",
  },
  { name: ATTR_HTTP_RESPONSE_STATUS_CODE, value: "The backend's status; absent when it gave none." },
  {
    name: ATTR_ERROR_TYPE,
    value: "The upstream fault, or the backend's 5xx status; the span's status is then error.",
  },
];

export const RESOURCE_ATTRIBUTES: readonly AttributeRow[] = [
  { name: ATTR_SERVICE_NAME, value: "`OTEL_SERVICE_NAME`, else `petstore-gateway`." },
  { name: "<key>", value: "Each `key=value` of `OTEL_RESOURCE_ATTRIBUTES`." },
];

/** Whether the table lists a span attribute of this name (a note or a fact by its own name). */
export function isListedAttribute(name: string, rows: readonly AttributeRow[]): boolean {
  return rows.some((row) => {
    const open = row.name.indexOf("<");
    if (open === -1) return row.name === name;
    const prefix = row.name.slice(0, open);
    return name.startsWith(prefix) && (row.names ?? []).includes(name.slice(prefix.length));
  });
}

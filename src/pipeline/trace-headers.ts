// The client's trace context, judged once when the request opens (both doors): a valid
// traceparent names the request's trace in every log line and goes to the backend unchanged, with
// its tracestate (cut to what the spec asks to keep, or dropped when invalid); an invalid one goes
// nowhere, with its tracestate. Without an exporter the gateway invents none: a traceparent of
// ours would impose our sampled flag on every parent-based backend. A traceparent whose ids hold a
// key (the request's own, or one a policy knows) is dropped as the request id is replaced: its
// ids would put the key in every log line and span of the request.
import { keptTracestate, parseTraceparent } from "../trace-context.ts";
import type { CoreExchange } from "./exchange.ts";
import { isCredentialAsId } from "./request-id.ts";

export function judgeTraceContext(exchange: CoreExchange, isCredential: (value: string) => boolean): void {
  const headers = exchange.req.headers;
  const raw = headers.traceparent;
  if (raw === undefined) {
    // A tracestate without its traceparent belongs to no trace (the spec: not to be parsed).
    if (headers.tracestate !== undefined) delete headers.tracestate;
    return;
  }
  const parent = parseTraceparent(raw);
  const authorization = headers.authorization;
  const holdsKey =
    parent !== undefined &&
    (isCredentialAsId(parent.traceId, authorization, isCredential) ||
      isCredentialAsId(parent.spanId, authorization, isCredential));
  // The operator sees in the access line that somebody tried, as with a request id.
  if (holdsKey) exchange.facts.traceparentDropped = "credential";
  if (parent === undefined || holdsKey) {
    delete headers.traceparent;
    if (headers.tracestate !== undefined) delete headers.tracestate;
    return;
  }
  exchange.traceId = parent.traceId;
  exchange.spanId = parent.spanId;
  const state = headers.tracestate;
  if (state === undefined) return;
  const kept = keptTracestate(state);
  if (kept === undefined) delete headers.tracestate;
  else if (kept !== state) headers.tracestate = kept;
}

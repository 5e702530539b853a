// W3C Trace Context (https://www.w3.org/TR/trace-context/): the client's traceparent and
// tracestate, judged as the spec says. A header the gateway cannot parse is nobody's trace: it is
// neither believed, logged nor forwarded (the spec's "restart the trace"; without an exporter the
// gateway starts none, so the backend gets no trace context at all rather than one its own
// tracer would reject or, worse, half-accept). Every scan is one pass over a bounded header.

/** A traceparent the gateway accepts: what the access line logs and a span continues. */
export interface TraceParent {
  /** 32 lower-case hex digits, not all zero. */
  readonly traceId: string;
  /** The caller's span: 16 lower-case hex digits, not all zero. */
  readonly spanId: string;
  /** The trace-flags byte (bit 0: sampled). */
  readonly flags: number;
}

// version "-" trace-id "-" parent-id "-" trace-flags: 2 + 1 + 32 + 1 + 16 + 1 + 2.
const VERSION_00_LENGTH = 55;
const TRACE_ID_START = 3;
const TRACE_ID_END = TRACE_ID_START + 32;
const SPAN_ID_END = TRACE_ID_END + 1 + 16;
const FLAGS_START = SPAN_ID_END + 1;
const DASH = 0x2d;

/**
 * The traceparent, or undefined when it is missing or invalid: not exactly one header value,
 * another length than version 00's, upper-case or non-hex digits, an all-zero id, version ff.
 * A higher version is parsed as the spec says: its first 55 characters as version 00's, then
 * the end of the value or a dash.
 */
export function parseTraceparent(value: string | readonly string[] | undefined): TraceParent | undefined {
  if (typeof value !== "string" || value.length < VERSION_00_LENGTH) return undefined;
  if (!isLowerHex(value, 0, 2) || value.charCodeAt(2) !== DASH) return undefined;
  const version = value.slice(0, 2);
  if (version === "ff") return undefined;
  if (version === "00" ? value.length !== VERSION_00_LENGTH : !endsFields(value)) return undefined;
  if (value.charCodeAt(TRACE_ID_END) !== DASH || value.charCodeAt(SPAN_ID_END) !== DASH) return undefined;
  if (!isLowerHex(value, TRACE_ID_START, TRACE_ID_END) || !isLowerHex(value, TRACE_ID_END + 1, SPAN_ID_END)) {
    return undefined;
  }
  if (!isLowerHex(value, FLAGS_START, VERSION_00_LENGTH)) return undefined;
  if (isZeros(value, TRACE_ID_START, TRACE_ID_END) || isZeros(value, TRACE_ID_END + 1, SPAN_ID_END)) {
    return undefined;
  }
  return {
    traceId: value.slice(TRACE_ID_START, TRACE_ID_END),
    spanId: value.slice(TRACE_ID_END + 1, SPAN_ID_END),
    flags: Number.parseInt(value.slice(FLAGS_START, VERSION_00_LENGTH), 16),
  };
}

// A later version may add fields after the flags, each after a dash.
function endsFields(value: string): boolean {
  return value.length === VERSION_00_LENGTH || value.charCodeAt(VERSION_00_LENGTH) === DASH;
}

// The spec's limits on tracestate: list-members, a key's and a value's length.
const MAX_MEMBERS = 32;
const MAX_KEY = 256;
const MAX_VALUE = 256;
/**
 * What the gateway passes on: the spec asks to propagate at least 512 characters, and says which
 * members go first when truncating (those over 128 characters, then from the end).
 */
export const TRACESTATE_KEPT_CHARACTERS = 512;
const LONG_MEMBER = 128;

/**
 * The tracestate to forward beside a valid traceparent: the value unchanged when it is valid and
 * short enough; over TRACESTATE_KEPT_CHARACTERS, whole members dropped as the spec says; undefined
 * when it is missing, not a string, empty or invalid (a bad key or value, a duplicate key, more
 * than 32 members), which drops it and lets the trace go on.
 */
export function keptTracestate(value: string | readonly string[] | undefined): string | undefined {
  if (typeof value !== "string") return undefined;
  const members: string[] = [];
  const keys = new Set<string>();
  // Node joins repeated tracestate headers with ", ": the spec's own way of combining them.
  for (const raw of value.split(",")) {
    const member = raw.trim();
    // Empty members (",,") are allowed and carry nothing.
    if (member === "") continue;
    const equals = member.indexOf("=");
    if (equals <= 0) return undefined;
    const key = member.slice(0, equals);
    if (!isKey(key) || !isValue(member, equals + 1) || keys.has(key)) return undefined;
    keys.add(key);
    members.push(member);
    if (members.length > MAX_MEMBERS) return undefined;
  }
  if (members.length === 0) return undefined;
  if (value.length <= TRACESTATE_KEPT_CHARACTERS) return value;
  return truncated(members);
}

function truncated(members: string[]): string | undefined {
  let kept = members;
  let length = joinedLength(kept);
  if (length > TRACESTATE_KEPT_CHARACTERS) {
    kept = kept.filter((member) => member.length <= LONG_MEMBER);
    length = joinedLength(kept);
  }
  while (length > TRACESTATE_KEPT_CHARACTERS && kept.length > 0) {
    length -= (kept.pop() as string).length + (kept.length > 0 ? 1 : 0);
  }
  return kept.length === 0 ? undefined : kept.join(",");
}

function joinedLength(members: readonly string[]): number {
  let length = Math.max(0, members.length - 1);
  for (const member of members) length += member.length;
  return length;
}

// key = simple-key / multi-tenant-key; simple-key = lcalpha 0*255( lcalpha / DIGIT / "_" / "-"/ "*" / "/" );
// multi-tenant-key = tenant-id "@" system-id, tenant-id = ( lcalpha / DIGIT ) 0*240( ... ), system-id = lcalpha 0*13( ... ).
function isKey(key: string): boolean {
  if (key.length > MAX_KEY) return false;
  const at = key.indexOf("@");
  if (at === -1) return isLowerAlpha(key.charCodeAt(0)) && keyChars(key, 1, key.length);
  const system = key.length - at - 1;
  const first = key.charCodeAt(0);
  return (
    at <= 241 &&
    system >= 1 &&
    system <= 14 &&
    (isLowerAlpha(first) || isDigit(first)) &&
    keyChars(key, 1, at) &&
    isLowerAlpha(key.charCodeAt(at + 1)) &&
    keyChars(key, at + 2, key.length)
  );
}

function keyChars(key: string, from: number, to: number): boolean {
  for (let index = from; index < to; index++) {
    const code = key.charCodeAt(index);
    if (isLowerAlpha(code) || isDigit(code)) continue;
    // _ - * /
    if (code === 0x5f || code === DASH || code === 0x2a || code === 0x2f) continue;
    return false;
  }
  return true;
}

// value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E.
function isValue(member: string, from: number): boolean {
  const length = member.length - from;
  if (length < 1 || length > MAX_VALUE) return false;
  for (let index = from; index < member.length; index++) {
    const code = member.charCodeAt(index);
    if (code === 0x2c || code === 0x3d || code > 0x7e || code < 0x20) return false;
  }
  // The member was trimmed, so the value ends with no space.
  return true;
}

function isLowerHex(text: string, from: number, to: number): boolean {
  for (let index = from; index < to; index++) {
    const code = text.charCodeAt(index);
    if (!isDigit(code) && (code < 0x61 || code > 0x66)) return false;
  }
  return true;
}

function isZeros(text: string, from: number, to: number): boolean {
  for (let index = from; index < to; index++) if (text.charCodeAt(index) !== 0x30) return false;
  return true;
}

function isLowerAlpha(code: number): boolean {
  return code >= 0x61 && code <= 0x7a;
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

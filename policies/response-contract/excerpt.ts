// Excerpts of a backend's answer for log lines and the drift report: short, and never key
// material. Built only once a violation is found, never on the path of an answer that keeps the
// contract.
import type { Exchange } from "../../src/policy.ts";
import { isKeyCharacter, REDACTED } from "../../src/redaction.ts";

/** The offset V8 names in a JSON.parse message. */
const JSON_ERROR_POSITION = /position ([0-9]+)/;
/** A member name whose value is a secret. */
const SENSITIVE_NAME = /key|token|secret|passw|authori[sz]ation|credential|cookie|session/i;

const EXCERPT_CHARS = 80;
const STRING_CHARS = 40;
// A key's piece this long is what no output may hold.
const PIECE_DIGITS = 12;
// Values under such names, and keys (exchange.redact: the request's own credential, known keys,
// key-shaped runs), never reach a log line or the drift report, whatever the backend put in its
// answer. Every text is redacted whole before it is cut.

export function excerpt(value: unknown, name: string, exchange: Exchange): string {
  const rendered = render(value, name, exchange, 0);
  return rendered.length > EXCERPT_CHARS ? `${rendered.slice(0, EXCERPT_CHARS - 1)}…` : rendered;
}

function render(value: unknown, name: string, exchange: Exchange, depth: number): string {
  if (value === undefined) return "(missing)";
  if (name !== "" && SENSITIVE_NAME.test(name) && value !== null && typeof value !== "boolean") {
    return JSON.stringify(REDACTED);
  }
  // Exact digits, so a key sent as a number is recognised (and redacted) as itself.
  if (typeof value === "bigint") return exchange.redact(value.toString());
  // A double beyond 2^53 shows digits the backend did not send: the redactor could not recognise
  // a key in them, and a dozen of them in a row may be a piece of one.
  if (
    typeof value === "number" &&
    !Number.isSafeInteger(value) &&
    digitCount(String(value)) >= PIECE_DIGITS
  ) {
    return REDACTED;
  }
  if (typeof value === "string") {
    const short = value.length > STRING_CHARS ? `${value.slice(0, STRING_CHARS)}…` : value;
    const redacted = exchange.redact(value) === value ? short : REDACTED;
    return JSON.stringify(redacted);
  }
  if (value === null || typeof value !== "object") return String(value);
  if (Array.isArray(value)) {
    if (depth > 0) return `[…${value.length}]`;
    return `[${value
      .slice(0, 3)
      .map((item) => render(item, "", exchange, depth + 1))
      .join(",")}${value.length > 3 ? `,…${value.length - 3} more` : ""}]`;
  }
  if (depth > 0) return "{…}";
  const parts: string[] = [];
  let length = 0;
  for (const [key, child] of Object.entries(value)) {
    const part = `${JSON.stringify(exchange.redact(key).slice(0, STRING_CHARS))}:${render(child, key, exchange, depth + 1)}`;
    parts.push(part);
    length += part.length;
    if (length > EXCERPT_CHARS) break;
  }
  return `{${parts.join(",")}}`;
}

export function jsonErrorExcerpt(text: string, message: string, exchange: Exchange): string {
  const match = JSON_ERROR_POSITION.exec(message);
  const position = match ? Number(match[1]) : 0;
  // The window around the error grows to whole runs of key characters (and their escapes), so
  // that a key cut at its edge is still recognised (and redacted) as a whole.
  let start = Math.max(0, position - 24);
  while (start > 0 && isRunCharacter(text.charCodeAt(start - 1))) start--;
  let end = Math.min(text.length, position + 24);
  while (end < text.length && isRunCharacter(text.charCodeAt(end))) end++;
  const shown = `${start > 0 ? "…" : ""}${exchange.redact(text.slice(start, end))}${end < text.length ? "…" : ""}`;
  if (shown.length === 0) return "(empty body)";
  return shown.length > EXCERPT_CHARS ? `${shown.slice(0, EXCERPT_CHARS - 1)}…` : shown;
}

/** A header value (Content-Type, ...) as an excerpt: redacted and cut short. */
export function headerExcerpt(value: string, exchange: Exchange): string {
  return exchange.redact(value).slice(0, STRING_CHARS);
}

/** A key character, or one that a %XX or \uXXXX escape of one is written with. */
function isRunCharacter(c: number): boolean {
  return isKeyCharacter(c) || c === 37 /* % */ || c === 92 /* \ */;
}

function digitCount(text: string): number {
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) digits++;
  }
  return digits;
}

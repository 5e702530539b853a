// Text the gateway does not control (a client's request, a backend's answer) is read here. A
// regex with nested or adjacent unbounded runs can take cubic time or worse on a crafted input,
// and the event loop serves every client: test/unit/source-regexes.test.ts has recheck judge
// every regex of src/ and policies/, these among them. Where no regex is needed, a scan over
// character codes does the job in one pass.

import { isKeyCharacter, REDACTED } from "./redaction.ts";

// --- Requests ------------------------------------------------------------------------------------
/**
 * A path that is not canonical: the path the policies judge must be the path the backend gets, so
 * no percent-encoding, no backslash, no ';' parameters, no empty or dot segments, no control
 * characters.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
export const NON_CANONICAL_PATH = /[%\\;\u0000-\u0020\u007f]|\/\/|\/\.\.?(?:\/|$)/;
/** A client's X-Request-Id that the gateway keeps (any other is replaced). */
export const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
/** An answer's Content-Type the gateway reads as JSON: application/json or a +json type. */
export const JSON_FAMILY_MEDIA_TYPE = /^application\/(?:[\w.+-]*\+)?json\s*(?:;|$)/i;
/** A header name with a character other than letters, digits and '-' (x_consumer, x.consumer). */
export const NOT_PLAIN_HEADER_NAME = /[^A-Za-z0-9-]/;
/** An integer as a parameter or a JSON number may write it: no sign but "-", no leading zero. */
export const INTEGER_LITERAL = /^-?(?:0|[1-9][0-9]*)$/;

// --- JSON bodies (requests and answers) --------------------------------------------------------
// A digit followed by '.', 'e' or 'E', or 16+ digits in a row: only then can a number be
// written as a non-literal integer (1.0, 1e3) or exceed 2^53. Strings may trigger it too;
// that only costs the slower, still correct, path.
export const MAY_NEED_NUMBER_SOURCE = /[0-9][.eE]|[0-9]{16}/;
/** A key that could be __proto__ & co. once decoded: written plainly, or with any \u escape. */
export const MAY_HOLD_PROTOTYPE_KEY = /"(?:__proto__|constructor|prototype)"\s*:|\\u/;
/** 16 digits in a row: an integer literal that may be beyond 2^53. */
export const SIXTEEN_DIGITS = /[0-9]{16}/;
/** A JSON number at lastIndex. */
export const JSON_NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
/** A JSON string escape at lastIndex. */
export const JSON_ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;
/** The offset V8 names in a JSON.parse message. */
export const JSON_ERROR_POSITION = /position ([0-9]+)/;
/** An array index in a JSON pointer. */
export const POINTER_ARRAY_INDEX = /\/[0-9]+(?=\/|$)/g;

// --- Excerpts of answers and headers for logs and reports ----------------------------------------
/** A member name whose value is a secret. */
export const SENSITIVE_NAME = /key|token|secret|passw|authori[sz]ation|credential|cookie|session/i;
/** A cell a spreadsheet would run as a formula. */
export const FORMULA_START = /^[=+\-@\t\r]/;
/** A cell that needs RFC 4180 quotes. */
export const CSV_QUOTED = /[",\r\n]/;
/** A character HTML text or a quoted attribute value must carry as a character reference. */
export const HTML_SPECIAL = /[&<>"']/g;
/**
 * What a terminal acts on rather than prints: C0 and C1 controls (ESC and CSI start escape
 * sequences), DEL, and the bidirectional overrides and isolates that reorder what is shown.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
export const TERMINAL_CONTROLS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
/** The same, less what JSON.stringify already escapes (C0): for JSON written to a terminal. */
export const TERMINAL_CONTROLS_BEYOND_C0 = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * The credential of an Authorization value in the Bearer scheme, trimmed ("" for none), or
 * undefined for any other value. RFC 6750 §2.1: the scheme is case-insensitive, one or more
 * spaces before the token. A scan: /^bearer(?: +(.*))?$/i is quadratic on a run of spaces.
 */
export function bearerCredential(authorization: string): string | undefined {
  if (authorization.length < 6 || !startsWithIgnoringAsciiCase(authorization, 0, "bearer")) return undefined;
  if (authorization.length === 6) return "";
  if (authorization.charCodeAt(6) !== 32) return undefined;
  for (let i = 7; i < authorization.length; i++) {
    const c = authorization.charCodeAt(i);
    // What "." does not match, and so what "$" does not follow.
    if (c === 10 || c === 13 || c === 0x2028 || c === 0x2029) return undefined;
  }
  return authorization.slice(7).trim();
}

const LOGGED_PATH_MAX = 256;

/**
 * The request target for the log: parameters named for credentials blanked, keys redacted (by
 * the exchange's redact), then bounded in length. Redacted before the cut, so that a cut through
 * a key cannot leave a piece of it too short to be recognised.
 */
export function loggedPath(url: string, exchange: { redact(text: string): string }): string {
  // A key pasted into the query string (?api_key=…) is refused, but its line must not keep it.
  const text = exchange.redact(url.includes("?") ? redactCredentialQuery(url) : url);
  return text.length > LOGGED_PATH_MAX ? `${text.slice(0, LOGGED_PATH_MAX)}…` : text;
}

const CREDENTIAL_WORDS = ["key", "token", "auth", "secret", "password", "signature"];

/**
 * The value of every parameter whose name holds a credential word (any case), as [redacted]. A
 * parameter starts at any "?" or "&" and its name runs to the first "=" (a "&" first: no value);
 * the value runs to the next "&". A name without such a word is passed over whole: a later "?"
 * inside it starts a part of the same name, which holds no such word either.
 */
export function redactCredentialQuery(text: string): string {
  let out = "";
  let copied = 0;
  let start = nextParameterStart(text, 0);
  while (start !== -1) {
    let end = start + 1;
    while (end < text.length) {
      const c = text.charCodeAt(end);
      if (c === 61 /* = */ || c === 38 /* & */) break;
      end++;
    }
    if (end === text.length) break;
    if (text.charCodeAt(end) === 38) {
      start = end;
      continue;
    }
    if (!holdsCredentialWord(text, start + 1, end)) {
      start = nextParameterStart(text, end + 1);
      continue;
    }
    let valueEnd = text.indexOf("&", end + 1);
    if (valueEnd === -1) valueEnd = text.length;
    out += `${text.slice(copied, end + 1)}${REDACTED}`;
    copied = valueEnd;
    start = valueEnd === text.length ? -1 : valueEnd;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

function nextParameterStart(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 63 /* ? */ || c === 38 /* & */) return i;
  }
  return -1;
}

function holdsCredentialWord(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    for (const word of CREDENTIAL_WORDS) {
      if (i + word.length <= to && startsWithIgnoringAsciiCase(text, i, word)) return true;
    }
  }
  return false;
}

/** Whether text holds word (lower-case ASCII letters) at index, in any ASCII case. */
function startsWithIgnoringAsciiCase(text: string, index: number, word: string): boolean {
  for (let k = 0; k < word.length; k++) {
    const c = text.charCodeAt(index + k);
    const lower = c >= 65 && c <= 90 ? c + 32 : c;
    if (lower !== word.charCodeAt(k)) return false;
  }
  return true;
}

const QUOTED_MAX = 64;

/**
 * A client's own text (a parameter's or a member's name) as an error message quotes it: cut
 * short, but never through a run of key characters, which is kept whole or left out whole. The
 * message goes back through proxies, browser histories and bug reports: the output that writes
 * it redacts keys (Exchange.redact), and a piece of one cut off here could not be recognised there.
 */
export function quotedClientText(text: string): string {
  return cutText(text, QUOTED_MAX);
}

/**
 * text cut to at most max characters and "…", never through a run of key characters: the run is
 * kept whole or left out whole, so that a redactor that comes after sees whole keys.
 */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = max;
  while (cut > 0 && isKeyCharacter(text.charCodeAt(cut)) && isKeyCharacter(text.charCodeAt(cut - 1))) cut--;
  return `${text.slice(0, cut)}…`;
}

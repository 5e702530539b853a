// Key material never comes back out: one rule for every text the gateway writes (the access line,
// error messages that quote a client, contract excerpts, the deprecation line and report), so
// that no output can drift from the others. Outputs call it before they cut a text short: a
// piece of a key too short to be recognised would otherwise survive the cut.
//
// A key is
// - the request's own credential (any part of its Authorization value), wherever it appears;
// - a maximal run of [A-Za-z0-9_-] of at least KNOWN_KEY_MIN characters that a policy recognises
//   (auth: its SHA-256 is in the key file), each run asked about once;
// - a maximal run of at least SHAPED_KEY_MIN such characters holding a letter: what a key looks
//   like even when no policy knows it (a revoked one, another environment's), and nothing of this
//   interface's paths, values or messages does (ids are digits, names are short).
// A run is read through percent-encoding (%41) and JSON's \u escapes (\u0041) as the characters
// they stand for, so that an encoded key is the same key.

export const REDACTED = "[redacted]";
/** The shortest run a policy is asked about: shorter ones cannot be keys of the key file's strength. */
export const KNOWN_KEY_MIN = 20;
/** The shortest run redacted for its shape alone. */
export const SHAPED_KEY_MIN = 24;
// A credential shorter than this is not looked for (every "Bearer x" would blank out the letter
// x); one longer is not a key anyone was given, and looking for it would cost its length per
// character of every output.
const CREDENTIAL_MIN = 8;
const CREDENTIAL_MAX = 256;

/** Whether a run of key characters (decoded) is a key some policy knows. */
export type KeyRecognizer = (run: string) => boolean;

/**
 * The parts of an Authorization value that are the request's own credential: every part between
 * spaces, tabs or commas of 8 to 256 characters (for Bearer, the credential; the scheme's name is
 * shorter). Shared with the request id's check (request-id.ts).
 */
export function credentialsOf(authorization: string | undefined): string[] {
  if (authorization === undefined) return [];
  const parts: string[] = [];
  let start = -1;
  for (let i = 0; i <= authorization.length; i++) {
    const c = i < authorization.length ? authorization.charCodeAt(i) : 32;
    const separator = c === 32 || c === 9 || c === 44 /* , */ || c === 10 || c === 13;
    if (!separator && start === -1) start = i;
    else if (separator && start !== -1) {
      const length = i - start;
      if (length >= CREDENTIAL_MIN && length <= CREDENTIAL_MAX) parts.push(authorization.slice(start, i));
      start = -1;
    }
  }
  return parts;
}

/** text with every key in it (see the top of this module) replaced by [redacted]; linear in its length. */
export function redactKeys(text: string, credentials: readonly string[], isKey: KeyRecognizer): string {
  let result = text;
  for (const credential of credentials) {
    if (result.includes(credential)) result = result.replaceAll(credential, REDACTED);
  }
  return result.length < KNOWN_KEY_MIN ? result : redactRuns(result, credentials, isKey);
}

function redactRuns(text: string, credentials: readonly string[], isKey: KeyRecognizer): string {
  let out = "";
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    // Units are read the same way from a given start and a run is read to its end, so every
    // character is read once as part of a run or skipped once.
    let end = i;
    // Built only once an escape turns up: most runs are written plainly, and are their own text.
    let decoded: string | undefined;
    let length = 0;
    let letter = false;
    for (;;) {
      const width = unitWidth(text, end);
      if (width === 0) break;
      const c = unitValue(text, end, width);
      letter ||= isLetter(c);
      if (width > 1 && decoded === undefined) decoded = text.slice(i, end);
      if (decoded !== undefined) decoded += String.fromCharCode(c);
      length++;
      end += width;
    }
    if (end === i) {
      i++;
      continue;
    }
    if (length >= KNOWN_KEY_MIN) decoded ??= text.slice(i, end);
    if (decoded !== undefined && length >= KNOWN_KEY_MIN && isRedacted(decoded, letter, credentials, isKey)) {
      out += `${text.slice(copied, i)}${REDACTED}`;
      copied = end;
    }
    i = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

function isRedacted(
  run: string,
  letter: boolean,
  credentials: readonly string[],
  isKey: KeyRecognizer,
): boolean {
  if (letter && run.length >= SHAPED_KEY_MIN) return true;
  for (const credential of credentials) if (run.includes(credential)) return true;
  return isKey(run);
}

/**
 * The width of the key character at index: 1 for one written plainly, 3 for %XX, 6 for \uXXXX
 * standing for one; 0 for anything else.
 */
function unitWidth(text: string, index: number): number {
  const c = text.charCodeAt(index);
  if (isKeyCharacter(c)) return 1;
  if (c === 37 /* % */) {
    return isKeyCharacter(hexValue(text, index + 1, 2)) ? 3 : 0;
  }
  if (c === 92 /* \ */ && text.charCodeAt(index + 1) === 117 /* u */) {
    return isKeyCharacter(hexValue(text, index + 2, 4)) ? 6 : 0;
  }
  return 0;
}

/** The character a unit of that width at index stands for. */
function unitValue(text: string, index: number, width: number): number {
  if (width === 1) return text.charCodeAt(index);
  return width === 3 ? hexValue(text, index + 1, 2) : hexValue(text, index + 2, 4);
}

/** The value of `digits` hex digits at index, or -1. */
function hexValue(text: string, index: number, digits: number): number {
  let value = 0;
  for (let k = 0; k < digits; k++) {
    const c = text.charCodeAt(index + k);
    const digit =
      c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1;
    if (digit === -1) return -1;
    value = value * 16 + digit;
  }
  return value;
}

function isLetter(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/** A letter, a digit, "_" or "-": what keys (base64url) are made of. */
export function isKeyCharacter(c: number): boolean {
  return isLetter(c) || (c >= 48 && c <= 57) || c === 95 /* _ */ || c === 45 /* - */;
}

// --- Cutting a text short: never through a key -----------------------------------------------

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

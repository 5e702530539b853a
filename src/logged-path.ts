// The request target as the access log and a span show it: parameters named for credentials
// blanked, keys redacted (the exchange's redact), then bounded in length. It runs on every
// request's target, a client's text: each is a scan over character codes, linear in the target
// whatever it is built to do (test/slow/untrusted-text-scan.test.ts times them on hostile ones;
// the regex it replaced, /([?&][^=&]*(?:key|token|…)[^=&]*=)[^&]*/gi, took 33-48 s on 16 KB).
import { REDACTED } from "./redaction.ts";

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
function redactCredentialQuery(text: string): string {
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

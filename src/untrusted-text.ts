// Text the gateway does not control (a client's request, a backend's answer) is read here. A
// regex with nested or adjacent unbounded runs can take cubic time or worse on a crafted input,
// and the event loop serves every client: so every regex that runs on such text is exported
// from this module, and test/untrusted-text.test.ts has recheck judge each export. Where no
// regex is needed, a scan over character codes does the job in one pass.

const REDACTED = "[redacted]";
const LOGGED_PATH_MAX = 256;
// A run of key-shaped characters this long is taken for a key.
const KEY_RUN = 24;

/** The request target for the log: with key material redacted, then bounded in length. */
export function loggedPath(url: string): string {
  let text = url;
  // A key pasted into the query string (?api_key=…) is refused, but its line must not keep it.
  if (text.includes("?")) text = redactCredentialQuery(text);
  // Redacting before the cut, so a cut through a key cannot leave a piece of it too short to
  // look like one.
  text = redactKeyShaped(text);
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

/**
 * Runs of 24 or more key-shaped units (letters, digits, "_.~+-", or a %XX escape, which counts
 * as the one character it stands for) that hold a letter, as [redacted]: what keys look like (a
 * random key may have no digit), and nothing of this interface's paths, values or messages is
 * (ids are digits). For a key pasted anywhere in a request target (?status=<key>, /pets/<key>)
 * and for client text quoted in an error message.
 */
export function redactKeyShaped(text: string): string {
  // Shorter texts cannot hold a run that long: most lines skip the scan.
  if (text.length < KEY_RUN) return text;
  let out = "";
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    // Units are read the same way from a given start, so a run is its longest reading; one too
    // short is retried from its next character, where an escape reads as two more units. Such a
    // run is at most 69 characters: the retries stay linear in the text.
    let end = i;
    let units = 0;
    let letter = false;
    for (;;) {
      const c = text.charCodeAt(end);
      if (isKeyCharacter(c)) {
        letter ||= isLetter(c);
        end++;
      } else if (
        c === 37 /* % */ &&
        isHexDigit(text.charCodeAt(end + 1)) &&
        isHexDigit(text.charCodeAt(end + 2))
      ) {
        letter ||= isLetter(Number.parseInt(text.slice(end + 1, end + 3), 16));
        end += 3;
      } else break;
      units++;
    }
    if (units < KEY_RUN) {
      i++;
      continue;
    }
    if (letter) {
      out += `${text.slice(copied, i)}${REDACTED}`;
      copied = end;
    }
    i = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

function isLetter(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isHexDigit(c: number): boolean {
  return isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

/** A letter, a digit or one of "_.~+-". */
function isKeyCharacter(c: number): boolean {
  return (
    isLetter(c) ||
    isDigit(c) ||
    c === 95 /* _ */ ||
    c === 46 /* . */ ||
    c === 126 /* ~ */ ||
    c === 43 /* + */ ||
    c === 45 /* - */
  );
}

// The key a client sends: the credential of its Authorization value in the Bearer scheme. Read on
// every request from a client's own text, so read by a scan: /^bearer(?: +(.*))?$/i, which it
// replaces and agrees with (test/unit/policies/auth/bearer-credential.test.ts), is quadratic on a
// run of spaces.

const SCHEME = "bearer";

/**
 * The credential of an Authorization value in the Bearer scheme, trimmed ("" for none), or
 * undefined for any other value. RFC 6750 §2.1: the scheme is case-insensitive, one or more
 * spaces before the token.
 */
export function bearerCredential(authorization: string): string | undefined {
  if (authorization.length < SCHEME.length) return undefined;
  for (let k = 0; k < SCHEME.length; k++) {
    // ASCII's case bit: only "B" and "b" give "b" (a character beyond ASCII stays beyond it).
    if ((authorization.charCodeAt(k) | 0x20) !== SCHEME.charCodeAt(k)) return undefined;
  }
  if (authorization.length === SCHEME.length) return "";
  if (authorization.charCodeAt(SCHEME.length) !== 32) return undefined;
  for (let i = SCHEME.length + 1; i < authorization.length; i++) {
    const c = authorization.charCodeAt(i);
    // What "." does not match, and so what "$" does not follow.
    if (c === 10 || c === 13 || c === 0x2028 || c === 0x2029) return undefined;
  }
  return authorization.slice(SCHEME.length + 1).trim();
}

// The request target as the access log writes it (src/logged-path.ts): a scan that agrees with
// the regexes it replaced, which took cubic time on a crafted target.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { loggedPath } from "../../src/logged-path.ts";
import { redactKeys } from "../../src/redaction.ts";

// The access log's redaction as it was written with regexes, kept as the reference the scans
// must agree with. Only ever run here, on short texts: CREDENTIAL_QUERY takes cubic time.
const CREDENTIAL_QUERY = /([?&][^=&]*(?:key|token|auth|secret|password|signature)[^=&]*=)[^&]*/gi;
// A key character written plainly, as %XX, or as \uXXXX: "-", digits, letters, "_".
const ESCAPED_KEY_CHARACTER = "(?:2[dD]|3[0-9]|4[1-9A-Fa-f]|5[0-9Aa]|5[Ff]|6[1-9A-Fa-f]|7[0-9Aa])";
const KEY_RUN = new RegExp(
  `(?:[A-Za-z0-9_-]|%${ESCAPED_KEY_CHARACTER}|\\\\u00${ESCAPED_KEY_CHARACTER})+`,
  "g",
);
// The one key the reference and the gateway are told of (a policy's recognizer).
const KNOWN = "1234567890-1234567890";
const isKnown = (run: string) => run === KNOWN;
function regexLoggedPath(url: string): string {
  let text = url;
  if (text.includes("?")) text = text.replace(CREDENTIAL_QUERY, "$1[redacted]");
  text = text.replace(KEY_RUN, (run) => {
    const plain = run.replace(/%([0-9A-Fa-f]{2})|\\u([0-9A-Fa-f]{4})/g, (_, pct?: string, u?: string) =>
      String.fromCharCode(Number.parseInt(pct ?? u ?? "", 16)),
    );
    if (plain.length < 20) return run;
    return (/[A-Za-z]/.test(plain) && plain.length >= 24) || isKnown(plain) ? "[redacted]" : run;
  });
  return text.length > 256 ? `${text.slice(0, 256)}…` : text;
}
const redactor = { redact: (text: string) => redactKeys(text, [], isKnown) };

test("the access log redacts a request target exactly as the regexes it replaces did", () => {
  // The characters the two patterns care about, and a few that split runs.
  const unit = fc.constantFrom(
    ..."?&=%/;[ a1Ff4K-_.~+".split(""),
    "key",
    "KEY",
    "Token",
    "auth",
    "secret",
    "password",
    "signature",
    "%41",
    "%2d",
    "%2e",
    "\\u0041",
    "\\u005f",
    "\\u00",
    "1234567890",
    "%4",
    "%20",
    "%2G",
    "abcdefghij",
    "0123456789",
    "ſ", // long s: upper-cases to S, which an /i regex without u must not match
  );
  fc.assert(
    fc.property(fc.array(unit, { maxLength: 60 }), (pieces) => {
      const target = pieces.join("");
      assert.equal(loggedPath(target, redactor), regexLoggedPath(target));
    }),
    { numRuns: 20_000 },
  );
  for (const target of [
    "/v1/pets?api_key=abc&status=sold",
    "/v1/pets?status=sold&X-Auth-Token=abc?def&limit=1",
    "/v1/pets?a=b?token=c",
    "/v1/pets&api_key=abc?x=1",
    `/v1/pets/${"a".repeat(23)}`,
    `/v1/pets/%41${"a".repeat(22)}`,
    `/v1/pets?status=${"1".repeat(30)}`,
    `/v1/pets?status=${"%61".repeat(24)}`,
    `/v1/pets?status=${KNOWN}`,
    `/v1/pets?status=${"\\u0031".repeat(20)}`,
    `/v1/pets?${"x".repeat(300)}`,
  ]) {
    assert.equal(loggedPath(target, redactor), regexLoggedPath(target), target);
  }
});

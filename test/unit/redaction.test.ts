// The one redactor every output uses: whole keys, however they are written and wherever they sit
// in a text, come out as [redacted], and nothing else is touched.
import assert from "node:assert/strict";
import { hash } from "node:crypto";
import { test } from "node:test";
import fc from "fast-check";
import { credentialsOf, quotedClientText, REDACTED, redactKeys } from "../../src/redaction.ts";

const PROPERTY_RUNS = Math.max(50, Math.round(2_000 * Number(process.env.PROPERTY_SCALE ?? 0.1)));
const KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

/** Keys of every shape a key file may hold: long CLI-like ones, and short ones of digits or letters only. */
const keyArbitrary = fc.oneof(
  fc.string({ unit: fc.constantFrom(...KEY_ALPHABET), minLength: 20, maxLength: 48 }),
  fc.string({ unit: fc.constantFrom(..."0123456789"), minLength: 20, maxLength: 23 }),
  fc.string({ unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz"), minLength: 20, maxLength: 23 }),
);

const percentEncoded = (key: string) =>
  [...key].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join("");
const unicodeEscaped = (key: string) =>
  [...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
const halfEncoded = (key: string) =>
  [...key].map((c, i) => (i % 2 === 0 ? c : `%${c.charCodeAt(0).toString(16)}`)).join("");

/** What never sits next to a key as part of it: the separators texts are made of. */
const separator = fc.constantFrom(" ", "/", "?", "=", "&", '"', ":", ",", ".", "[", "\n", "{", "; ");
// Shorter than a key, so that the filler alone is never redacted.
const filler = fc.string({ unit: fc.constantFrom(..."abc 123/?=&.,:\"'{}[]%\\"), maxLength: 19 });

function assertNoPiece(output: string, key: string, context: string): void {
  for (let at = 0; at + 12 <= key.length; at++) {
    assert.ok(
      !output.includes(key.slice(at, at + 12)),
      `${context}: a piece of the key is left in ${output}`,
    );
  }
}

test("a known key is redacted whole wherever it sits, written plainly, percent-encoded or \\u-escaped", () => {
  fc.assert(
    fc.property(
      keyArbitrary,
      fc.constantFrom(String, percentEncoded, unicodeEscaped, halfEncoded),
      filler,
      separator,
      separator,
      filler,
      (key, write, before, left, right, after) => {
        const digests = new Set([hash("sha256", key, "hex")]);
        const text = `${before}${left}${write(key)}${right}${after}`;
        const redacted = redactKeys(text, [], (run) => digests.has(hash("sha256", run, "hex")));
        assert.ok(redacted.includes(REDACTED), `not redacted: ${text}`);
        assertNoPiece(decoded(redacted), key, text);
        // What surrounded the key is left as it was.
        assert.ok(redacted.startsWith(`${before}${left}`.replace(/[A-Za-z0-9_-]+$/, "")));
      },
    ),
    { numRuns: PROPERTY_RUNS },
  );
});

test("the request's own credential is redacted wherever it appears, whatever characters it holds", () => {
  const credential = "s3cr€t.with/odd+chars=";
  const text = `ua: curl/8 ${credential} and again:${credential}`;
  assert.equal(
    redactKeys(text, credentialsOf(`Bearer ${credential}`), () => false),
    `ua: curl/8 ${REDACTED} and again:${REDACTED}`,
  );
  // Inside a longer run (a request id built around it): the credential goes, what was around it stays.
  const credentialInRun = `${"k".repeat(8)}0123456789`;
  assert.equal(
    redactKeys(`req retry-2-${credentialInRun}-x`, [credentialInRun], () => false),
    `req retry-2-${REDACTED}-x`,
  );
});

test("every part of a non-Bearer Authorization value is looked for; short parts are not", () => {
  assert.deepEqual(credentialsOf("Basic YWNtZTpzZWNyZXQ="), ["YWNtZTpzZWNyZXQ="]);
  assert.deepEqual(credentialsOf("Bearer abc"), []);
  assert.deepEqual(credentialsOf("Token one-two-three, four-five-six"), ["one-two-three", "four-five-six"]);
  assert.deepEqual(credentialsOf(undefined), []);
  assert.deepEqual(credentialsOf(`Bearer ${"x".repeat(300)}`), []);
});

test("text without a key comes back as it was: short ids, digits, names, messages", () => {
  const isKey = () => false;
  for (const text of [
    "/v1/pets?limit=20&status=available",
    "/v1/pets/12345678901234567890123",
    "query parameter colour is not part of listPets",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0",
    "a-name-of-twenty-three",
  ]) {
    assert.equal(redactKeys(text, [], isKey), text);
  }
  // Shaped like a key (24 characters or more with a letter): redacted though no policy knows it.
  assert.equal(redactKeys(`x ${"a1".repeat(12)} y`, [], isKey), `x ${REDACTED} y`);
});

test("each run is asked about once, and only runs long enough to be a key", () => {
  const asked: string[] = [];
  redactKeys("/a/0123456789/01234567890123456789/0123456789012345678901234567890", [], (run) => {
    asked.push(run);
    return false;
  });
  assert.deepEqual(asked, ["01234567890123456789", "0123456789012345678901234567890"]);
});

test("a quoted client text is never cut through a run of key characters", () => {
  fc.assert(
    fc.property(
      fc.string({ maxLength: 40 }),
      keyArbitrary,
      fc.string({ maxLength: 40 }),
      (before, key, after) => {
        const quoted = quotedClientText(`${before} ${key} ${after}`);
        const shown = quoted.endsWith("…") ? quoted.slice(0, -1) : quoted;
        // The key is either all there or not there at all: the redactor then sees it whole.
        const at = shown.indexOf(key.slice(0, 12));
        if (at !== -1) assert.ok(shown.includes(key), `cut through the key: ${quoted}`);
      },
    ),
    { numRuns: PROPERTY_RUNS },
  );
});

/** The text with its %XX and \\uXXXX escapes read as the characters they stand for. */
function decoded(text: string): string {
  return text.replace(/%([0-9A-Fa-f]{2})|\\u([0-9A-Fa-f]{4})/g, (_, pct?: string, u?: string) =>
    String.fromCharCode(Number.parseInt(pct ?? u ?? "", 16)),
  );
}

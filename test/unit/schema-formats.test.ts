// Every format a document can enable runs on client and backend text: each one is inventoried
// with why its work is linear (test/slow/document-patterns has recheck judge and times them), and
// url, which recheck rates quadratic, runs on the linear engine with ajv-formats' own meaning.
import assert from "node:assert/strict";
import { test } from "node:test";
import { fullFormats } from "ajv-formats/dist/formats.js";
import fc from "fast-check";
import { FORMAT_INVENTORY, linearUrlFormat } from "../../src/schema-formats.ts";
import { createSchemaValidator } from "../../src/schema-validator.ts";

const SCALE = Number(process.env.PROPERTY_SCALE ?? 0.1);
const ajvUrl = fullFormats.url as RegExp;

test("every format the gateway's ajv knows is in the inventory, with why its work is linear", () => {
  for (const draft of ["draft-07", "2020-12"] as const) {
    const known = Object.keys(createSchemaValidator({ draft }).formats).sort();
    assert.deepEqual(known, Object.keys(FORMAT_INVENTORY).sort(), draft);
  }
});

test("a document's url format never runs ajv-formats' regex, and still checks urls", (t) => {
  let ranAjvUrl = 0;
  const exec = RegExp.prototype.exec;
  t.mock.method(RegExp.prototype, "exec", function (this: RegExp, text: string) {
    if (this.source === ajvUrl.source) ranAjvUrl++;
    return exec.call(this, text);
  });
  const validate = createSchemaValidator({ draft: "2020-12" }).compile({ type: "string", format: "url" });
  assert.equal(validate("https://example.com/pets?x=1"), true);
  assert.equal(validate("https://10.0.0.1/"), false);
  assert.equal(validate(`http://${":".repeat(10_000)}\u0000`), false);
  assert.equal(ranAjvUrl, 0);
});

// Octets as a url may write them: every value up to 255, with leading zeros, and beyond.
const OCTETS = (() => {
  const octets = new Set<string>();
  for (let value = 0; value <= 260; value++) octets.add(String(value));
  for (let value = 0; value < 20; value++)
    octets.add(String(value).padStart(2, "0")).add(String(value).padStart(3, "0"));
  for (const value of ["016", "031", "0254", "999", "1000"]) octets.add(value);
  return [...octets];
})();

test("the linear url accepts exactly the dotted quads ajv-formats' url does, private ranges refused", () => {
  const linear = linearUrlFormat();
  const differ: string[] = [];
  for (const first of OCTETS) {
    for (const second of OCTETS) {
      const url = `http://${first}.${second}.7.09`;
      if (linear(url) !== ajvUrl.test(url)) differ.push(url);
    }
  }
  for (const last of OCTETS) {
    for (const url of [`ftp://172.16.0.${last}`, `http://8.8.8.${last}:80/`, `https://192.168.1.${last}`]) {
      if (linear(url) !== ajvUrl.test(url)) differ.push(url);
    }
  }
  assert.deepEqual(differ.slice(0, 5), []);
  assert.equal(linear("http://172.31.0.1"), false);
  assert.equal(linear("http://172.32.0.1"), true);
});

test("the linear url answers as ajv-formats' url on a corpus of urls", () => {
  const linear = linearUrlFormat();
  const part = fc.constantFrom(
    "http://",
    "https://",
    "ftp://",
    "HTTP://",
    "httpſ://",
    "mailto:",
    "user",
    ":pass",
    "@",
    "example",
    "Example",
    "xn--bcher-kva",
    "bücher",
    "例え",
    ".",
    "-",
    "com",
    "de",
    "q",
    "10.0.0.1",
    "169.254.1.1",
    "172.16.5.4",
    "192.168.0.1",
    "8.8.8.8",
    "1.2.3",
    ":",
    "8080",
    "80",
    "/",
    "path",
    "?a=1",
    "#top",
    " ",
    "\u00a0",
    "\u3000",
    "\u2028",
    "\t",
    "\u212a",
    "%20",
    "[::1]",
  );
  // Shaped like urls (scheme, user, host, port, path), each piece also drawn from the parts.
  const piece = fc.array(part, { maxLength: 3 }).map((parts) => parts.join(""));
  const shaped = fc
    .tuple(
      fc.constantFrom("http://", "https://", "ftp://", "HTTP://", "httpſ://", "gopher://"),
      fc.option(
        fc.oneof(
          fc.constantFrom("user@", "u:p@", "a b@", "@", "x@y@", "ſ@"),
          piece.map((user) => `${user}@`),
        ),
      ),
      fc.oneof(
        fc.constantFrom(
          "example.com",
          "bücher.de",
          "a-b.example.org",
          "8.8.8.8",
          "10.1.2.3",
          "172.20.1.1",
          "localhost",
        ),
        fc.array(piece, { minLength: 1, maxLength: 4 }).map((labels) => labels.join(".")),
      ),
      fc.option(fc.constantFrom(":80", ":8080", ":1", ":123456", ":")),
      fc.option(
        fc.oneof(
          fc.constantFrom("/", "/a/b", "/a b", "/\u3000", "/?q=1#f"),
          piece.map((path) => `/${path}`),
        ),
      ),
    )
    .map((parts) => parts.filter((p) => p !== null).join(""));
  const urls = fc.sample(
    fc.oneof(
      shaped,
      fc.array(part, { maxLength: 9 }).map((parts) => parts.join("")),
    ),
    {
      numRuns: Math.max(500, Math.round(20_000 * SCALE)),
      seed: 27,
    },
  );
  urls.push(
    "http://example.com",
    "https://user:pw@bücher.de:8080/a/b?c#d",
    "http://localhost",
    "http://a.b-.com",
  );
  const differ = urls.filter((url) => linear(url) !== ajvUrl.test(url));
  assert.deepEqual(differ.slice(0, 5), []);
  const valid = urls.filter((url) => ajvUrl.test(url)).length;
  assert.ok(valid > urls.length / 50, `the corpus holds valid urls too: ${valid} of ${urls.length}`);
});

// The one reading of a request's head and target that every port uses, as a pure function.
import assert from "node:assert/strict";
import type { IncomingHttpHeaders } from "node:http";
import { test } from "node:test";
import fc from "fast-check";
import {
  canonicalTarget,
  connectionListed,
  dropHopByHop,
  isHopByHop,
  isValidHost,
  parseQuery,
  type RequestHead,
  scrubRequestHeaders,
  serializeQuery,
} from "../../../src/pipeline/canonical-request.ts";

const SEED = Number(process.env.FC_SEED ?? 20_261_124);

function head(url: string, more: Partial<RequestHead> = {}): RequestHead {
  const rawHeaders = more.rawHeaders ?? ["Host", "gw"];
  const headers: IncomingHttpHeaders = {};
  for (let i = 0; i < rawHeaders.length; i += 2)
    headers[(rawHeaders[i] as string).toLowerCase()] = rawHeaders[i + 1] as string;
  return { url, httpVersionMajor: 1, httpVersionMinor: 1, rawHeaders, headers, ...more };
}

const refusalOf = (target: ReturnType<typeof canonicalTarget>) =>
  target.refusal === undefined ? undefined : [target.refusal.code, target.closeConnection];

test("an origin-form target is read as its path and its query, as sent", () => {
  assert.deepEqual(canonicalTarget(head("/v1/pets?limit=3&status=sold")), {
    refusal: undefined,
    path: "/v1/pets",
    rawQuery: "limit=3&status=sold",
  });
  assert.deepEqual(canonicalTarget(head("/metrics")), { refusal: undefined, path: "/metrics", rawQuery: "" });
  assert.deepEqual(canonicalTarget(head("/deprecations?")), {
    refusal: undefined,
    path: "/deprecations",
    rawQuery: "",
  });
  // The query is not the path's business: what it holds is for parseQuery to judge.
  assert.equal(canonicalTarget(head("/healthz?a=%zz&b=/../x")).refusal, undefined);
});

test("absolute-form targets are refused with BAD_PATH, however broken their host or port", () => {
  for (const url of [
    "http://x/v1/pets",
    "http://a:99999/metrics",
    "http://[/",
    "http://%zz/healthz",
    "http://1.2.3.4.5/readyz",
    "https://gw/healthz",
    "*",
    "",
    "healthz",
  ]) {
    assert.deepEqual(refusalOf(canonicalTarget(head(url))), ["BAD_PATH", false], url);
  }
});

test("a path that is not canonical is refused with BAD_PATH, the connection kept", () => {
  for (const url of [
    "/v1/pets/../admin",
    "/v1/./pets",
    "/v1/pets/.",
    "/v1//pets",
    "/v1/%2e%2e/admin",
    "/v1/pets%2f1",
    "/v1\\pets",
    "/v1/pets;jsessionid=1",
    "/v1/pets\u0000",
    "/v1/pe ts",
    "/v1/pets\u007f",
  ]) {
    assert.deepEqual(refusalOf(canonicalTarget(head(url))), ["BAD_PATH", false], JSON.stringify(url));
  }
});

test("framing a gateway must not pass on is refused with BAD_REQUEST and closes the connection", () => {
  const cases: [string, RequestHead][] = [
    ["no Host on HTTP/1.1", head("/healthz", { rawHeaders: [] })],
    ["two Hosts", head("/healthz", { rawHeaders: ["Host", "a", "host", "b"] })],
    ["HTTP/2.0", head("/healthz", { httpVersionMajor: 2, httpVersionMinor: 0 })],
    ["HTTP/1.2", head("/healthz", { httpVersionMinor: 2 })],
    [
      "chunked on HTTP/1.0",
      head("/healthz", { httpVersionMinor: 0, rawHeaders: ["Transfer-Encoding", "chunked"] }),
    ],
    ["gzip, chunked", head("/healthz", { rawHeaders: ["Host", "gw", "Transfer-Encoding", "gzip, chunked"] })],
  ];
  for (const [name, request] of cases) {
    assert.deepEqual(refusalOf(canonicalTarget(request)), ["BAD_REQUEST", true], name);
  }
  // Framing is judged before the target: a broken target on a broken frame still closes.
  assert.deepEqual(refusalOf(canonicalTarget(head("http://[/", { rawHeaders: [] }))), ["BAD_REQUEST", true]);
  // HTTP/1.0 needs no Host.
  assert.equal(canonicalTarget(head("/healthz", { httpVersionMinor: 0, rawHeaders: [] })).refusal, undefined);
});

test("no target text throws: every string is a path and query or a refusal", () => {
  fc.assert(
    fc.property(
      fc.string({ unit: "binary", maxLength: 300 }),
      fc.string({ maxLength: 40 }),
      (tail, prefix) => {
        for (const url of [tail, `/${tail}`, `http://${tail}`, `${prefix}?${tail}`]) {
          const target = canonicalTarget(head(url));
          if (target.refusal === undefined) {
            assert.ok(target.path.startsWith("/"));
            assert.equal(url.includes("?") ? `${target.path}?${target.rawQuery}` : target.path, url);
          }
          parseQuery(target.refusal === undefined ? target.rawQuery : tail, new Map());
        }
      },
    ),
    { seed: SEED, numRuns: 200 },
  );
});

test("the query is decoded once; a name given twice or broken percent-encoding is refused", () => {
  const query = new Map<string, string>();
  assert.equal(parseQuery("format=csv&note=a+b%20c&flag&&", query), undefined);
  assert.deepEqual(
    [...query],
    [
      ["format", "csv"],
      ["note", "a b c"],
      ["flag", ""],
    ],
  );
  const twice = parseQuery("format=csv&format=json", new Map());
  assert.deepEqual(
    [twice?.code, twice?.message],
    ["DUPLICATE_PARAMETER", "query parameter format is given more than once"],
  );
  // The same name spelled two ways is the same name.
  assert.equal(parseQuery("a=1&%61=2", new Map())?.code, "DUPLICATE_PARAMETER");
  const broken = parseQuery("format=%zz", new Map());
  assert.deepEqual([broken?.code, broken?.status], ["BAD_REQUEST", 400]);
});

test("a Host that is an address or a DNS name, with an optional port, is read", () => {
  for (const host of [
    "gw",
    "api.example.com",
    "api.example.com.",
    "my_host.internal:8080",
    "127.0.0.1",
    "10.0.0.7:65535",
    "[::1]",
    "[2001:db8::1]:443",
    `${"a".repeat(63)}.example`,
    `${"a.".repeat(126)}b`,
  ]) {
    assert.ok(isValidHost(host), host);
    assert.equal(canonicalTarget(head("/v1/pets", { rawHeaders: ["Host", host] })).refusal, undefined, host);
  }
});

test("any other Host is refused with BAD_REQUEST and closes the connection", () => {
  for (const host of [
    "",
    'evil.example"><x',
    "a b",
    "gw:0",
    "gw:65536",
    "gw:80:80",
    "gw:",
    "gw:-1",
    "[::1",
    "[zz]",
    "[::1]x",
    "::1",
    "a..b",
    ".a",
    `${"a".repeat(64)}.example`,
    `${"a.".repeat(126)}bc`,
    "user@gw",
    "gw/v1",
    "gw\\evil",
    "ex%61mple.com",
    "é.example",
  ]) {
    assert.equal(isValidHost(host), false, JSON.stringify(host));
    assert.deepEqual(
      refusalOf(canonicalTarget(head("/v1/pets", { rawHeaders: ["Host", host] }))),
      ["BAD_REQUEST", true],
      JSON.stringify(host),
    );
  }
});

test("the Host check is linear: a 16 KB Host is judged by its length alone", () => {
  const started = performance.now();
  for (let i = 0; i < 1000; i++) isValidHost(`${"a".repeat(16_384)}:80`);
  assert.ok(performance.now() - started < 1000);
});

test("a query a policy changed is written so that reading it back gives the same names and values", () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.tuple(fc.string(), fc.string()), { selector: ([name]) => name }),
      (pairs) => {
        const query = new Map(pairs);
        const read = new Map<string, string>();
        assert.equal(parseQuery(serializeQuery(query), read), undefined);
        // An empty name with an empty value writes "=", which reads back as nothing: nothing lost.
        const expected = new Map(pairs.filter(([name, value]) => name !== "" || value !== ""));
        assert.deepEqual(
          [...read].filter(([name, value]) => name !== "" || value !== ""),
          [...expected],
        );
      },
    ),
    { seed: SEED },
  );
  assert.equal(serializeQuery(new Map([["a b", "x&y=z"]])), "a%20b=x%26y%3Dz");
  assert.equal(serializeQuery(new Map()), "");
});

test("before any policy runs, hop-by-hop, Connection-listed and spoofable headers are gone", () => {
  const headers: IncomingHttpHeaders = {
    host: "gw",
    "content-length": "2",
    connection: "keep-alive, X-Secret, Host, Content-Length, transfer-encoding",
    "keep-alive": "timeout=5",
    te: "trailers",
    upgrade: "websocket",
    "proxy-authorization": "Basic x",
    "transfer-encoding": "chunked",
    "x-secret": "1",
    forwarded: "for=1.2.3.4",
    "x-http-method-override": "DELETE",
    "x-original-url": "/admin",
    expect: "100-continue",
    authorization: "Bearer k",
  };
  scrubRequestHeaders(headers);
  assert.deepEqual(headers, {
    host: "gw",
    "content-length": "2",
    // Until forwarding: it tells the policies a body is coming.
    "transfer-encoding": "chunked",
    authorization: "Bearer k",
  });
  dropHopByHop(headers);
  assert.deepEqual(headers, { host: "gw", "content-length": "2", authorization: "Bearer k" });
});

test("Connection never lists away Host or Content-Length, in any case or spacing", () => {
  assert.deepEqual(connectionListed(" X-A ,,HOST, content-length ,x-b"), ["x-a", "x-b"]);
  assert.deepEqual(connectionListed(undefined), []);
  assert.deepEqual(connectionListed(["x-a"]), []);
  for (const name of ["connection", "transfer-encoding", "upgrade", "te", "trailer"])
    assert.ok(isHopByHop(name));
  assert.equal(isHopByHop("x-request-id"), false);
});

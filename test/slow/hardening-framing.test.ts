// Request framing, the canonical path and header hygiene, probed byte by byte on raw sockets:
// what an HTTP client library would refuse to send is exactly what an attacker sends.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { contractAnswer } from "../fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "../fixtures/programmable-backend.ts";
import { watchForCrashes } from "../support/crashes.ts";
import { eventually } from "../support/eventually.ts";
import { framingProbes, pipelinedRequest } from "../support/framing-probes.ts";
import { startGateway, type TestGateway } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { sampleValue, scrape } from "../support/metrics.ts";
import { type RawOutcome, rawExchange } from "../support/raw-socket.ts";
import { assertNoSecrets } from "../support/secrets.ts";
import { sentinelReached } from "../support/sentinel.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;
const AUTH = `Authorization: Bearer ${key}\r\n`;
const BODY = '{"name":"Rex","categoryId":7}';
const PROBES = framingProbes(key);
/** A valid request pipelined behind every probe: if it reached the backend, the probe got through. */
const SECOND = pipelinedRequest(key);
const post = (version: string, headers: string, body: string) =>
  `POST /v1/pets HTTP/${version}\r\nHost: gw\r\n${AUTH}Content-Type: application/json\r\n${headers}\r\n${body}`;

describe("request framing: every smuggling-shaped request is refused on a raw socket", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let port: number;
  const crashes = watchForCrashes();
  const bodies: string[] = [];
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    gw = await startGateway({ upstreamUrl: backend.url, keys });
    port = Number(new URL(gw.origin).port);
  });
  after(async () => {
    const metrics = await request(`${gw.opsUrl}/metrics`);
    await gw.close();
    await backend.close();
    crashes.stop();
    assert.deepEqual(crashes.crashes, []);
    assertNoSecrets(keys.keys, [...gw.logs.raw, ...bodies, metrics.body], "framing suite output");
  });

  for (const [name, probe] of Object.entries(PROBES)) {
    test(`${name}, with a request pipelined behind it: one Error answer, the connection closed, nothing reaches the backend`, async () => {
      const seen = backend.requests.length;
      const outcome: RawOutcome = await rawExchange(port, probe + SECOND);
      bodies.push(outcome.text);
      assert.ok(outcome.closed, `the connection stayed open: ${JSON.stringify(outcome.text)}`);
      assert.equal(outcome.responses.length, 1, JSON.stringify(outcome.text));
      const [answer] = outcome.responses as [(typeof outcome.responses)[0]];
      // A method token the parser does not know is a method the gateway does not implement (RFC 9110 §9.1).
      if (name === "a lowercase method") assert.equal(answer.status, 501);
      else assert.ok(answer.status >= 400 && answer.status < 500, `status ${answer.status}`);
      assert.equal(answer.headers["x-content-type-options"], "nosniff");
      assert.equal(answer.headers.connection?.toLowerCase(), "close");
      const error = JSON.parse(answer.body) as { status: number };
      assert.ok(gw.gateway.api.validateError(error), answer.body);
      assert.equal(error.status, answer.status);
      const sentinel = await sentinelReached(`${gw.url}/pets`, key, backend);
      assert.deepEqual(
        backend.requests
          .slice(seen)
          .filter((r) => r.headers["x-request-id"] !== sentinel)
          .map((r) => `${r.method} ${r.url}`),
        [],
        "the backend saw a request",
      );
    });
  }

  test("the same connection still serves well-formed pipelined requests (the probes are not false alarms)", async () => {
    const seen = backend.requests.length;
    const outcome = await rawExchange(
      port,
      `${post("1.1", `Content-Length: ${BODY.length}\r\n`, BODY)}${SECOND}${SECOND.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")}`,
    );
    assert.deepEqual(
      outcome.responses.map((r) => r.status),
      [201, 200, 200],
    );
    assert.equal(backend.requests.length - seen, 3);
  });

  test("a method the parser does not know gets 501 NOT_IMPLEMENTED with a request id, an access line and method _OTHER", async () => {
    const requests = "http_server_request_duration_seconds_count";
    const other = { operation: "unmatched", http_request_method: "_OTHER", http_response_status_code: "501" };
    const counted = sampleValue(await scrape(gw), requests, other);
    const seen = backend.requests.length;
    for (const method of ["FOO", "BREW", "get"]) {
      const outcome = await rawExchange(port, `${method} /v1/pets HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\n`);
      bodies.push(outcome.text);
      const [answer, ...more] = outcome.responses;
      assert.equal(more.length, 0);
      assert.equal(answer?.status, 501, `${method}: ${outcome.text}`);
      assert.equal(answer.headers.connection?.toLowerCase(), "close");
      const error = JSON.parse(answer.body) as { code: string; status: number };
      assert.ok(gw.gateway.api.validateError(error), answer.body);
      assert.deepEqual([error.code, error.status], ["NOT_IMPLEMENTED", 501]);
      const requestId = answer.headers["x-request-id"];
      assert.match(String(requestId), /^[0-9a-f-]{36}$/);
      const line = await eventually("the access line", () =>
        gw.logs.messages("request").find((entry) => entry.reqId === requestId),
      );
      assert.equal(line.status, 501);
      assert.equal(line.method, "_OTHER");
      assert.equal(line.code, "NOT_IMPLEMENTED");
    }
    assert.equal(sampleValue(await scrape(gw), requests, other), counted + 3);
    assert.equal(backend.requests.length, seen);
    // Bytes that are no method token at all (a TLS hello on the plain port) are a bad request.
    const tls = await rawExchange(port, "\u0016\u0003\u0001\u0002\u0000\u0001\u0000\u01fc\u0003\u0003");
    assert.equal(tls.responses[0]?.status, 400);
    // A method the parser knows that no operation uses keeps 405 with the operation's Allow.
    const propfind = await rawExchange(
      port,
      `PROPFIND /v1/pets HTTP/1.1\r\nHost: gw\r\n${AUTH}Connection: close\r\n\r\n`,
    );
    assert.equal(propfind.responses[0]?.status, 405);
    assert.equal(propfind.responses[0]?.headers.allow, "GET, HEAD, POST");
  });

  test("a Host that is no address or DNS name gets 400 and never reaches the backend as X-Forwarded-Host", async () => {
    const seen = backend.requests.length;
    for (const host of ['evil.example"><x', "a b", "gw:99999", "[::1", "user@gw"]) {
      const outcome = await rawExchange(port, `GET /v1/pets HTTP/1.1\r\nHost: ${host}\r\n${AUTH}\r\n`);
      bodies.push(outcome.text);
      assert.equal(outcome.responses[0]?.status, 400, `${host}: ${outcome.text.split("\r\n")[0]}`);
      assert.equal(JSON.parse(outcome.responses[0]?.body ?? "{}").code, "BAD_REQUEST");
      assert.ok(outcome.closed, host);
    }
    assert.equal(backend.requests.length, seen);
    const fine = await rawExchange(
      port,
      `GET /v1/pets HTTP/1.1\r\nHost: api.example.com:8443\r\n${AUTH}Connection: close\r\n\r\n`,
    );
    assert.equal(fine.responses[0]?.status, 200);
    assert.equal(backend.requests.at(-1)?.headers["x-forwarded-host"], "api.example.com:8443");
  });

  test("100 Continue invites the body only once the key and the request's head are accepted", async () => {
    const seen = backend.requests.length;
    const head = (auth: string, type: string, length: number) =>
      `POST /v1/pets HTTP/1.1\r\nHost: gw\r\n${auth}Content-Type: ${type}\r\nExpect: 100-continue\r\nContent-Length: ${length}\r\n\r\n`;
    const refused: [string, string, number][] = [
      ["no key", head("", "application/json", BODY.length), 401],
      [
        "a wrong key",
        head("Authorization: Bearer not-a-key-of-this-gateway\r\n", "application/json", BODY.length),
        401,
      ],
      ["a body that is not JSON", head(AUTH, "text/plain", BODY.length), 415],
      ["a body declared over the limit", head(AUTH, "application/json", 10_000_000), 413],
    ];
    for (const [what, request, status] of refused) {
      // The client waits for 100 before it sends the body: it gets the refusal instead, and the connection closes.
      const outcome = await rawExchange(port, request);
      assert.deepEqual(
        outcome.responses.map((r) => r.status),
        [status],
        `${what}: ${outcome.text.split("\r\n")[0]}`,
      );
      assert.ok(outcome.closed, what);
    }
    const accepted = await rawExchange(port, [head(AUTH, "application/json", BODY.length), BODY], {
      gapMs: 100,
    });
    assert.deepEqual(
      accepted.responses.map((r) => r.status),
      [100, 201],
    );
    assert.equal(backend.requests.length - seen, 1, "only the accepted request reached the backend");
  });

  test("an Expect the gateway does not know is ignored, not answered with a bare 417, and not passed on", async () => {
    const seen = backend.requests.length;
    const outcome = await rawExchange(
      port,
      post("1.1", `Expect: teapot\r\nConnection: close\r\nContent-Length: ${BODY.length}\r\n`, BODY),
    );
    assert.equal(outcome.responses[0]?.status, 201);
    const continued = await request(`${gw.url}/pets`, {
      key,
      method: "POST",
      body: BODY,
      headers: { expect: "100-continue" },
    });
    assert.equal(continued.status, 201);
    for (const seenRequest of backend.requests.slice(seen))
      assert.equal(seenRequest.headers.expect, undefined);
  });
});

describe("one canonical path: what the policies judge is what the backend gets", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let port: number;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    gw = await startGateway({ upstreamUrl: backend.url, keys });
    port = Number(new URL(gw.origin).port);
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  const accessLineOf = (reqId: string | undefined) => {
    assert.ok(reqId, "the answer names its request");
    return eventually("the access line", () =>
      gw.logs.messages("request").find((line) => line.reqId === reqId),
    );
  };

  const NON_CANONICAL = [
    "/v1/pets/../admin",
    "/v1/pets/..",
    "/v1/pets/1/..",
    "/v1/./pets",
    "/v1/pets/.",
    "/v1/pets/%2e%2e/admin",
    "/v1/pets/%2E%2E/admin",
    "/v1/pets/.%2e/admin",
    "/v1/pets/..%2fadmin",
    "/v1/pets%2f1",
    "/v1/pets%2F1",
    "/v1/pets%5c1",
    "/v1/pets%5C..%5Cadmin",
    "/v1/pets\\1",
    "/v1/pets\\..\\admin",
    "/v1//pets",
    "//v1/pets",
    "/v1/pets;jsessionid=1",
    "/v1/pets/1;x=y",
    "/v1/pets%00",
    "/v1/pets/%252e%252e/admin",
    "/v1/pets/%u002e%u002e/admin",
    "/v1/pets/%C0%AE%C0%AE/admin",
    "/v1/pets/1%20",
    "http://gw/v1/pets",
    "*",
  ];

  for (const path of NON_CANONICAL) {
    test(`${JSON.stringify(path)} gets 400 with an Error body and never reaches the backend`, async () => {
      const seen = backend.requests.length;
      const outcome = await rawExchange(
        port,
        `GET ${path} HTTP/1.1\r\nHost: gw\r\n${AUTH}Connection: close\r\n\r\n`,
      );
      const answer = outcome.responses[0];
      assert.ok(answer, JSON.stringify(outcome.text));
      assert.equal(answer.status, 400, answer.body);
      assert.equal(JSON.parse(answer.body).code, "BAD_PATH");
      assert.ok(gw.gateway.api.validateError(JSON.parse(answer.body)));
      // The access line is written once the request has ended: had it been forwarded, the
      // backend would have seen it by then.
      await accessLineOf(answer.headers["x-request-id"]);
      assert.equal(backend.requests.length, seen, `the backend saw ${backend.requests.at(-1)?.url}`);
    });
  }

  test("/v1/pets/../admin never reaches the backend as /v1/admin, whatever the spelling", async () => {
    const seen = backend.requests.length;
    const outcomes = await Promise.all(
      NON_CANONICAL.map((path) =>
        rawExchange(port, `GET ${path} HTTP/1.1\r\nHost: gw\r\n${AUTH}Connection: close\r\n\r\n`),
      ),
    );
    for (const outcome of outcomes) await accessLineOf(outcome.responses[0]?.headers["x-request-id"]);
    assert.deepEqual(
      backend.requests
        .slice(seen)
        .filter((r) => !/^\/v1\/pets(?:\/\d+)?(?:\?|$)/.test(r.url))
        .map((r) => r.url),
      [],
    );
  });

  test("a canonical path reaches the backend exactly as judged", async () => {
    const answer = await request(`${gw.url}/pets/42`, { key });
    assert.equal(answer.status, 200);
    assert.equal(backend.requests.at(-1)?.url, "/v1/pets/42");
  });
});

describe("header hygiene, both directions", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let trusting: TestGateway;
  let port: number;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    gw = await startGateway({ upstreamUrl: backend.url, keys });
    trusting = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { server: { trustedProxies: ["127.0.0.1"] } },
    });
    port = Number(new URL(gw.origin).port);
  });
  after(async () => {
    await gw.close();
    await trusting.close();
    await backend.close();
  });

  const SPOOFING_HEADERS =
    "Connection: keep-alive, X-Hop-One, x-hop-two\r\n" +
    "X-Hop-One: 1\r\nX-Hop-Two: 2\r\nKeep-Alive: timeout=1\r\nProxy-Connection: keep-alive\r\n" +
    "TE: trailers\r\nTrailer: X-Late\r\nProxy-Authorization: Basic eDp5\r\nUpgrade: h2c\r\n" +
    "Forwarded: for=6.6.6.6;proto=https\r\nX-HTTP-Method-Override: DELETE\r\nX-HTTP-Method: DELETE\r\n" +
    "X-Method-Override: DELETE\r\nX-Original-URL: /admin\r\nX-Rewrite-URL: /admin\r\n" +
    "X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: evil.example\r\n" +
    "X-Consumer: admin\r\nX-Kept: yes\r\n";

  test("hop-by-hop headers, those named in Connection, Forwarded and method overrides never reach the backend", async () => {
    // The connection stays open (keep-alive): done at the whole answer, not at a time.
    const outcome = await rawExchange(
      port,
      `GET /v1/pets HTTP/1.1\r\nHost: gw.example\r\n${AUTH}${SPOOFING_HEADERS}\r\n`,
      { responses: 1 },
    );
    assert.equal(outcome.responses[0]?.status, 200);
    const seen = backend.requests.at(-1)?.headers ?? {};
    for (const name of [
      "x-hop-one",
      "x-hop-two",
      "keep-alive",
      "proxy-connection",
      "te",
      "trailer",
      "proxy-authorization",
      "upgrade",
      // The spoofing headers sent above, stated here as the specification rather than read from the code.
      "forwarded",
      "x-http-method-override",
      "x-http-method",
      "x-method-override",
      "x-original-url",
      "x-rewrite-url",
    ]) {
      assert.equal(seen[name], undefined, `${name} reached the backend`);
    }
    assert.equal(seen["x-kept"], "yes");
    assert.equal(backend.requests.at(-1)?.method, "GET");
    assert.equal(seen["x-consumer"], "acme", "the consumer header is the gateway's, not the client's");
  });

  test("a Connection header cannot remove what the gateway sets for the backend", async () => {
    const answer = await request(`${gw.url}/pets`, {
      key,
      headers: { connection: "keep-alive, x-consumer, x-forwarded-for, x-request-id", "x-consumer": "acme" },
    });
    assert.equal(answer.status, 200);
    const seen = backend.requests.at(-1)?.headers ?? {};
    assert.equal(seen["x-consumer"], "acme");
    assert.equal(seen["x-forwarded-for"], "127.0.0.1");
    assert.equal(seen["x-request-id"], answer.headers["x-request-id"]);
    // What the client itself declares connection-specific is gone on arrival, before any policy.
    const named = await request(`${gw.url}/pets`, { key, headers: { connection: "authorization" } });
    assert.equal(named.status, 401);
  });

  test("X-Forwarded-For, -Proto and -Host are the gateway's own when the peer is not a trusted proxy", async () => {
    await rawExchange(port, `GET /v1/pets HTTP/1.1\r\nHost: gw.example\r\n${AUTH}${SPOOFING_HEADERS}\r\n`, {
      responses: 1,
    });
    const seen = backend.requests.at(-1)?.headers ?? {};
    assert.equal(seen["x-forwarded-for"], "127.0.0.1");
    assert.equal(seen["x-forwarded-proto"], "http");
    assert.equal(seen["x-forwarded-host"], "gw.example");
  });

  test("a trusted proxy's X-Forwarded-For is kept and the peer appended", async () => {
    const answer = await request(`${trusting.url}/pets`, {
      key,
      headers: { "x-forwarded-for": "203.0.113.9" },
    });
    assert.equal(answer.status, 200);
    assert.equal(backend.requests.at(-1)?.headers["x-forwarded-for"], "203.0.113.9, 127.0.0.1");
  });

  test("the backend's hop-by-hop headers and those it names in Connection never reach the client", async () => {
    backend.behave(() => ({
      kind: "respond",
      status: 200,
      headers: {
        "content-type": "application/json",
        connection: "keep-alive, X-Upstream-Hop",
        "x-upstream-hop": "secret",
        "keep-alive": "timeout=1",
        "proxy-authenticate": "Basic",
        upgrade: "h2c",
        "x-upstream-kept": "yes",
      },
      body: "[]",
    }));
    try {
      const answer = await request(`${gw.url}/pets`, { key });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers["x-upstream-hop"], undefined);
      assert.equal(answer.headers["proxy-authenticate"], undefined);
      assert.equal(answer.headers.upgrade, undefined);
      assert.notEqual(answer.headers["keep-alive"], "timeout=1", "Keep-Alive is the gateway's own");
      assert.equal(answer.headers["x-upstream-kept"], "yes");
    } finally {
      backend.behave(contractAnswer);
    }
  });

  test("every kind of answer carries X-Content-Type-Options: nosniff", async () => {
    const answers = [
      await request(`${gw.url}/pets`, { key }),
      await request(`${gw.url}/pets`, { key, method: "HEAD" }),
      await request(`${gw.url}/pets`),
      await request(`${gw.url}/cats`, { key }),
      await request(`${gw.url}/pets`, { key, method: "DELETE" }),
      await request(`${gw.url}/pets?limit=x`, { key }),
    ];
    backend.behave(() => ({ kind: "reset-before-headers" }));
    try {
      answers.push(await request(`${gw.url}/pets/1`, { key }));
    } finally {
      backend.behave(contractAnswer);
    }
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 401, 404, 405, 400, 502],
    );
    for (const answer of answers) assert.equal(answer.headers["x-content-type-options"], "nosniff");
  });
});

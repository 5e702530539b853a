// Raw requests for the framing tests: each is a valid call apart from one flaw.
/** A valid request to pipeline behind a probe: if it reached the backend, the probe got through. */
export function pipelinedRequest(key: string): string {
  return `GET /v1/pets HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n\r\n`;
}

/**
 * Requests whose framing a parser and a backend could read differently (request smuggling), each
 * a valid createPet call apart from its flaw, so that one let through would reach the backend.
 */
export function framingProbes(key: string): Readonly<Record<string, string>> {
  const AUTH = `Authorization: Bearer ${key}\r\n`;
  const BODY = '{"name":"Rex","categoryId":7}';
  const JSON_BODY = `Content-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`;
  const post = (version: string, headers: string, body: string) =>
    `POST /v1/pets HTTP/${version}\r\nHost: gw\r\n${AUTH}Content-Type: application/json\r\n${headers}\r\n${body}`;
  const chunked = `${BODY.length.toString(16)}\r\n${BODY}\r\n0\r\n\r\n`;

  // The list first, then what else a parser and a backend could read differently.
  return {
    "Content-Length with Transfer-Encoding": post(
      "1.1",
      `Content-Length: ${BODY.length}\r\nTransfer-Encoding: chunked\r\n`,
      chunked,
    ),
    "two Content-Lengths": post("1.1", `Content-Length: ${BODY.length}\r\nContent-Length: 3\r\n`, BODY),
    "two equal Content-Lengths": post(
      "1.1",
      `Content-Length: ${BODY.length}\r\nContent-Length: ${BODY.length}\r\n`,
      BODY,
    ),
    "Content-Length: 0, 30": post("1.1", "Content-Length: 0, 30\r\n", BODY),
    "an obs-fold header line": post(
      "1.1",
      `X-Note: a\r\n  folded\r\nContent-Length: ${BODY.length}\r\n`,
      BODY,
    ),
    "a space before the colon": post("1.1", `Content-Length : ${BODY.length}\r\n`, BODY),
    "bare LF line ends": `POST /v1/pets HTTP/1.1\nHost: gw\n${AUTH.trim()}\nContent-Type: application/json\nContent-Length: ${BODY.length}\n\n${BODY}`,
    "a bare LF inside the header block": post("1.1", `X-Note: a\nContent-Length: ${BODY.length}\r\n`, BODY),
    "a NUL in a header value": post("1.1", `X-Note: a\u0000b\r\nContent-Length: ${BODY.length}\r\n`, BODY),
    "Transfer-Encoding: chunked, identity": post("1.1", "Transfer-Encoding: chunked, identity\r\n", chunked),
    "a chunked body on HTTP/1.0": post("1.0", "Transfer-Encoding: chunked\r\n", chunked),
    "a chunked body on HTTP/1.0 with keep-alive": post(
      "1.0",
      "Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n",
      chunked,
    ),
    "Transfer-Encoding: gzip, chunked": post("1.1", "Transfer-Encoding: gzip, chunked\r\n", chunked),
    "a malformed chunk size": post("1.1", "Transfer-Encoding: chunked\r\n", `zz\r\n${BODY}\r\n0\r\n\r\n`),
    "a negative Content-Length": post("1.1", "Content-Length: -1\r\n", BODY),
    "a Content-Length beyond 2^64": post("1.1", "Content-Length: 99999999999999999999999\r\n", BODY),
    "no Host header": `POST /v1/pets HTTP/1.1\r\n${AUTH}${JSON_BODY}`,
    "two Host headers": `POST /v1/pets HTTP/1.1\r\nHost: gw\r\nHost: evil.example\r\n${AUTH}${JSON_BODY}`,
    "HTTP/2.0 in the request line": `POST /v1/pets HTTP/2.0\r\nHost: gw\r\n${AUTH}${JSON_BODY}`,
    "HTTP/1.2 in the request line": `POST /v1/pets HTTP/1.2\r\nHost: gw\r\n${AUTH}${JSON_BODY}`,
    "an HTTP/2 preface": "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    "a lowercase method": `post /v1/pets HTTP/1.1\r\nHost: gw\r\n${AUTH}${JSON_BODY}`,
    "a tab in a header name": post("1.1", `X\tNote: 1\r\nContent-Length: ${BODY.length}\r\n`, BODY),
    "a NUL in the path": `GET /v1/pets\u0000 HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\n`,
    "a raw non-ASCII byte in the path": `GET /v1/pets/\u00e9 HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\n`,
    CONNECT: "CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n",
    "headers over the size cap": `GET /v1/pets HTTP/1.1\r\nHost: gw\r\nX-Big: ${"a".repeat(20_000)}\r\n${AUTH}\r\n`,
    "a body over the size cap": post("1.1", "Content-Length: 70000\r\n", "{"),
  };
}

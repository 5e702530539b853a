// The answers the gateway writes itself, and the headers every answer carries, with a fake
// exchange whose response records what was written.
import assert from "node:assert/strict";
import type { OutgoingHttpHeaders } from "node:http";
import type { Socket } from "node:net";
import { test } from "node:test";
import { gatewayError } from "../../../src/errors.ts";
import type { Operation } from "../../../src/openapi.ts";
import { finishHeaders } from "../../../src/pipeline/answer-headers.ts";
import type { Chain } from "../../../src/pipeline/chains.ts";
import { isClosing } from "../../../src/pipeline/connection-state.ts";
import type { CoreExchange } from "../../../src/pipeline/exchange.ts";
import {
  createLocalReplies,
  startsWithMethodToken,
  writeRawAnswer,
} from "../../../src/pipeline/local-replies.ts";

const getPet = { id: "getPet" } as unknown as Operation;
const PASTED_KEY = "pgw_pasted-key-0123456789abcdef";

function fakeExchange(request: { method?: string; headers?: Record<string, string> } = {}) {
  const written: { status?: number; headers?: OutgoingHttpHeaders; body?: unknown; ended: boolean } = {
    ended: false,
  };
  const socket = { destroySoon: () => undefined };
  const res = {
    headersSent: false,
    shouldKeepAlive: true,
    writeHead(status: number, headers: OutgoingHttpHeaders) {
      written.status = status;
      written.headers = headers;
      res.headersSent = true;
    },
    end(body?: unknown) {
      written.body = body;
      written.ended = true;
    },
    once: () => undefined,
  };
  const exchange = {
    req: { method: request.method ?? "GET", headers: request.headers ?? {}, socket },
    res,
    requestId: "id-1",
    operation: undefined,
    body: undefined,
    responseHeaders: {},
    notes: {},
    facts: {},
    rejection: undefined,
    finished: false,
    // As the gateway's redactor would, for the one key these tests use.
    redact: (text: string) => text.replaceAll(PASTED_KEY, "[redacted]"),
  } as unknown as CoreExchange;
  return { exchange, written, socket };
}

const replyPhases = (name: string): Chain => ({
  request: [],
  requestBody: [],
  response: [],
  reply: [
    {
      policy: name,
      run: (_exchange, status, headers) => {
        headers[name] = String(status);
      },
    },
  ],
  readsResponseBody: false,
  unusualHeaders: new Set(),
  failed: () => {},
});

test("a refusal is the Error object, uncached, with the request id, and it is noted on the exchange", () => {
  const abandoned: CoreExchange[] = [];
  const { refuse } = createLocalReplies(
    new Map(),
    (exchange) => void abandoned.push(exchange),
    () => false,
  );
  const { exchange, written, socket } = fakeExchange();
  const error = gatewayError("NOT_FOUND");
  refuse(exchange, error);
  assert.equal(written.status, 404);
  assert.deepEqual(JSON.parse(String(written.body)), {
    code: "NOT_FOUND",
    message: error.message,
    status: 404,
  });
  assert.equal(written.headers?.["content-type"], "application/json");
  assert.equal(written.headers?.["content-length"], Buffer.byteLength(String(written.body)));
  assert.equal(written.headers?.["cache-control"], "no-store");
  assert.equal(written.headers?.["x-request-id"], "id-1");
  assert.equal(written.headers?.["x-content-type-options"], "nosniff");
  assert.equal(written.headers?.connection, undefined);
  assert.equal(exchange.rejection, error);
  assert.deepEqual(abandoned, [exchange]);
  assert.equal(isClosing(socket as never), false);
});

test("a refusal's message goes out through the exchange's redactor, and its length with it", () => {
  const { refuse } = createLocalReplies(
    new Map(),
    () => undefined,
    () => false,
  );
  const { exchange, written } = fakeExchange();
  refuse(exchange, gatewayError("BAD_REQUEST", `query parameter ${PASTED_KEY} is not part of listPets`));
  const body = String(written.body);
  assert.equal(JSON.parse(body).message, "query parameter [redacted] is not part of listPets");
  assert.equal(written.headers?.["content-length"], Buffer.byteLength(body));
});

test("a refusal of a request whose body was never read closes the connection", () => {
  const { refuse } = createLocalReplies(
    new Map(),
    () => undefined,
    () => false,
  );
  for (const headers of [{ "content-length": "5" }, { "transfer-encoding": "chunked" }]) {
    const { exchange, written, socket } = fakeExchange({ method: "POST", headers });
    refuse(exchange, gatewayError("NOT_FOUND"));
    assert.equal(written.headers?.connection, "close");
    assert.equal(isClosing(socket as never), true);
  }
  const empty = fakeExchange({ method: "POST", headers: { "content-length": "0" } });
  refuse(empty.exchange, gatewayError("NOT_FOUND"));
  assert.equal(empty.written.headers?.connection, undefined);
});

test("a HEAD request's refusal has the head of the Error object and no body", () => {
  const { refuse } = createLocalReplies(
    new Map(),
    () => undefined,
    () => false,
  );
  const { exchange, written } = fakeExchange({ method: "HEAD" });
  refuse(exchange, gatewayError("NOT_FOUND"));
  assert.equal(written.status, 404);
  assert.ok(Number(written.headers?.["content-length"]) > 0);
  assert.equal(written.body, undefined);
});

test("nothing is written over an answer already under way or finished", () => {
  const { refuse, answerLocally } = createLocalReplies(
    new Map(),
    () => assert.fail("not abandoned"),
    () => false,
  );
  const { exchange, written } = fakeExchange();
  exchange.finished = true;
  refuse(exchange, gatewayError("NOT_FOUND"));
  answerLocally(exchange, { status: 204, headers: {}, reason: "preflight" });
  assert.equal(written.ended, false);
});

test("a refusal runs its operation's reply phases; a policy's own answer has none, and no body", () => {
  const { refuse, answerLocally } = createLocalReplies(
    new Map([[getPet, replyPhases("x-reply")]]),
    () => undefined,
    () => false,
  );
  const refused = fakeExchange();
  refused.exchange.operation = getPet;
  refuse(refused.exchange, gatewayError("NOT_FOUND"));
  assert.equal(refused.written.headers?.["x-reply"], "404");
  const local = fakeExchange();
  answerLocally(local.exchange, { status: 204, headers: { allow: "GET" }, reason: "preflight" });
  assert.equal(local.written.status, 204);
  assert.deepEqual(local.written.headers, {
    allow: "GET",
    "content-length": 0,
    "x-request-id": "id-1",
    "x-content-type-options": "nosniff",
  });
  assert.equal(local.written.body, undefined);
  assert.equal(local.exchange.facts.localReply, "preflight");
});

test("every answer carries what policies set, Vary added to, and Connection: close while draining", () => {
  const { exchange, socket } = fakeExchange();
  exchange.responseHeaders.vary = "Origin";
  exchange.responseHeaders["x-policy"] = "1";
  const headers: OutgoingHttpHeaders = { vary: "Accept", "x-policy": "backend" };
  finishHeaders(exchange, undefined, 200, headers, false);
  assert.equal(headers.vary, "Accept, Origin");
  assert.equal(headers["x-policy"], "1");
  assert.equal(isClosing(socket as never), false);
  finishHeaders(exchange, undefined, 200, headers, true);
  assert.equal(headers.connection, "close");
  assert.equal(isClosing(socket as never), true);
});

test("a refused request line is read as an unknown method only when it starts with a token and a space", () => {
  for (const line of ["BREW /pot HTTP/1.1", "X-CUSTOM! / HTTP/1.1", `${"M".repeat(32)} /`]) {
    assert.equal(startsWithMethodToken(Buffer.from(line)), true, line);
  }
  for (const line of [" GET /", "GE\tT /", "G\u0000T /", `${"M".repeat(33)} /`, "NOSPACE", ""]) {
    assert.equal(startsWithMethodToken(Buffer.from(line)), false, JSON.stringify(line));
  }
  assert.equal(startsWithMethodToken(undefined), false);
});

test("a raw answer is the Error object with the same headers as any refusal, and closes the connection", () => {
  let wire = "";
  let destroying = false;
  const socket = {
    end(text: string) {
      wire = text;
    },
    destroySoon() {
      destroying = true;
    },
  } as unknown as Socket;
  writeRawAnswer(socket, gatewayError("HEADERS_TOO_LARGE"), "id-9");
  const [head = "", body = ""] = wire.split("\r\n\r\n");
  const lines = head.split("\r\n");
  assert.equal(lines[0], "HTTP/1.1 431 Request Header Fields Too Large");
  assert.deepEqual(lines.slice(1), [
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "Cache-Control: no-store",
    "X-Content-Type-Options: nosniff",
    "X-Request-Id: id-9",
    "Connection: close",
  ]);
  assert.equal(JSON.parse(body).code, "HEADERS_TOO_LARGE");
  assert.equal(isClosing(socket), true);
  assert.equal(destroying, true);
});

// The request as the backend gets it, with a fake exchange and a fake upstream.
import assert from "node:assert/strict";
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { test } from "node:test";
import type { Chain } from "../../../src/pipeline/chains.ts";
import type { CoreExchange } from "../../../src/pipeline/exchange.ts";
import { clientAddressOf, forward } from "../../../src/pipeline/forward.ts";
import { trustedProxies } from "../../../src/trusted-proxies.ts";

const plain: Chain = {
  request: [],
  requestBody: [],
  response: [],
  reply: [],
  readsResponseBody: false,
  unusualHeaders: new Set(),
  failed: () => {},
};
const reading = { ...plain, readsResponseBody: true } as Chain;
const trusted = trustedProxies(["10.0.0.0/8"]);

function request(headers: IncomingHttpHeaders, remoteAddress = "::ffff:203.0.113.9") {
  return { headers, socket: { remoteAddress } } as unknown as IncomingMessage;
}

function forwarded(req: IncomingMessage, chain: Chain, body?: Buffer) {
  const sent: unknown[] = [];
  const exchange = { req, requestId: "id-1" } as unknown as CoreExchange;
  forward(exchange, chain, body, { forward: (...args) => void sent.push(args) }, trusted);
  assert.deepEqual(sent, [[exchange, body]]);
  return req.headers;
}

test("from an untrusted peer, X-Forwarded-* say what the gateway saw and X-Real-IP & co. are gone", () => {
  const headers = forwarded(
    request({
      host: "api.example",
      "x-forwarded-for": "1.2.3.4",
      "x-forwarded-proto": "https",
      "x-forwarded-host": "evil.example",
      "x-request-id": "client-id",
      "x-real-ip": "1.2.3.4",
      "cf-connecting-ip": "1.2.3.4",
      "transfer-encoding": "chunked",
      "accept-encoding": "gzip",
    }),
    plain,
  );
  assert.deepEqual(headers, {
    host: "api.example",
    "x-forwarded-for": "203.0.113.9",
    "x-forwarded-proto": "http",
    "x-forwarded-host": "api.example",
    "x-request-id": "id-1",
    "accept-encoding": "gzip",
  });
});

test("behind a trusted proxy the X-Forwarded-For chain goes on and the proxy's other headers stay", () => {
  const headers = forwarded(
    request(
      { host: "gw", "x-forwarded-for": "1.2.3.4", "x-forwarded-proto": "https", "x-real-ip": "1.2.3.4" },
      "10.1.2.3",
    ),
    plain,
  );
  assert.equal(headers["x-forwarded-for"], "1.2.3.4, 10.1.2.3");
  assert.equal(headers["x-forwarded-proto"], "https");
  assert.equal(headers["x-forwarded-host"], undefined);
  assert.equal(headers["x-real-ip"], "1.2.3.4");
});

test("a body goes with its length; an answer the gateway reads is asked for uncompressed", () => {
  const headers = forwarded(
    request({ host: "gw", "content-length": "999", "accept-encoding": "br" }),
    reading,
    Buffer.from("{}"),
  );
  assert.equal(headers["content-length"], "2");
  assert.equal(headers["accept-encoding"], "identity");
});

test("the client is the first hop from the right that no trusted proxy added", () => {
  assert.equal(clientAddressOf(request({ "x-forwarded-for": "1.1.1.1" }), trusted), "203.0.113.9");
  assert.equal(
    clientAddressOf(request({ "x-forwarded-for": "6.6.6.6, 1.1.1.1, 10.0.0.2" }, "10.0.0.1"), trusted),
    "1.1.1.1",
  );
  assert.equal(
    clientAddressOf(request({ "x-forwarded-for": " , 10.0.0.2" }, "10.0.0.1"), trusted),
    "10.0.0.1",
  );
  assert.equal(clientAddressOf(request({}, "10.0.0.1"), trusted), "10.0.0.1");
  assert.equal(
    clientAddressOf(request({ "x-forwarded-for": "::ffff:1.1.1.1" }, "10.0.0.1"), trusted),
    "1.1.1.1",
  );
});

// The body reader with a fake request (an event emitter with headers) and a fake exchange.
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { IncomingMessage } from "node:http";
import { test } from "node:test";
import { markExpectingContinue, readBody } from "../../../src/pipeline/body.ts";
import type { Chain } from "../../../src/pipeline/chains.ts";
import type { CoreExchange } from "../../../src/pipeline/exchange.ts";

const chain: Chain = {
  request: [],
  requestBody: [],
  response: [],
  reply: [],
  readsResponseBody: false,
  unusualHeaders: new Set(),
  failed: () => {},
};

function fakeExchange(headers: Record<string, string> = {}) {
  const req = Object.assign(new EventEmitter(), { headers }) as unknown as IncomingMessage;
  let continued = 0;
  const exchange = {
    req,
    res: { writeContinue: () => void continued++ },
    body: undefined,
    finished: false,
  } as unknown as CoreExchange;
  return { req, exchange, continued: () => continued };
}

function outcome(exchange: CoreExchange, limit: number) {
  const seen: string[] = [];
  readBody(
    exchange,
    chain,
    limit,
    (whole, wholeChain) => {
      assert.equal(wholeChain, chain);
      seen.push(`whole ${whole.body?.toString()}`);
    },
    () => void seen.push("too large"),
  );
  return seen;
}

test("the body is read whole, in one buffer, before the next step sees it", () => {
  const { req, exchange } = fakeExchange({ "content-length": "11" });
  const seen = outcome(exchange, 100);
  req.emit("data", Buffer.from("hello "));
  assert.deepEqual(seen, []);
  req.emit("data", Buffer.from("world"));
  req.emit("end");
  assert.deepEqual(seen, ["whole hello world"]);
});

test("a declared length over the cap is refused before a byte is read or invited", () => {
  const { req, exchange, continued } = fakeExchange({ "content-length": "101" });
  markExpectingContinue(req);
  assert.deepEqual(outcome(exchange, 100), ["too large"]);
  assert.equal(continued(), 0);
  assert.equal(req.listenerCount("data"), 0);
});

test("a chunked body is refused as soon as it goes over the cap, and read no further", () => {
  const { req, exchange } = fakeExchange({ "transfer-encoding": "chunked" });
  const seen = outcome(exchange, 10);
  req.emit("data", Buffer.alloc(10));
  assert.deepEqual(seen, []);
  req.emit("data", Buffer.alloc(1));
  assert.deepEqual(seen, ["too large"]);
  assert.equal(req.listenerCount("data"), 0);
  assert.equal(req.listenerCount("end"), 0);
});

test("100 Continue is written only for a request that asked for it, when its body is about to be read", () => {
  const plain = fakeExchange({ "content-length": "2" });
  outcome(plain.exchange, 100);
  assert.equal(plain.continued(), 0);
  const expecting = fakeExchange({ "content-length": "2" });
  markExpectingContinue(expecting.req);
  outcome(expecting.exchange, 100);
  assert.equal(expecting.continued(), 1);
});

test("a body that ends after its request was answered goes nowhere", () => {
  const { req, exchange } = fakeExchange({ "content-length": "2" });
  const seen = outcome(exchange, 100);
  req.emit("data", Buffer.from("{}"));
  exchange.finished = true;
  req.emit("end");
  assert.deepEqual(seen, []);
  assert.equal(exchange.body, undefined);
});

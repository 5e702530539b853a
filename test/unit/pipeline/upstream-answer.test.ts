// The pure parts of an upstream answer's way: decoding a held body, and the headers copied to the client.
import assert from "node:assert/strict";
import type { IncomingHttpHeaders } from "node:http";
import { test } from "node:test";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { decode, endToEnd } from "../../../src/pipeline/upstream-answer.ts";

const json = Buffer.from(JSON.stringify({ id: 1, name: "Rex" }));

test("an answer without a content coding is judged as it came", () => {
  for (const encoding of [undefined, "", "identity", "Identity", " IDENTITY "]) {
    const decoded = decode(json, encoding, 1024);
    assert.equal(decoded.body, json);
    assert.deepEqual([decoded.oversized, decoded.fault], [false, undefined]);
  }
});

test("gzip, deflate and br answers are decoded, in any case and spacing", () => {
  for (const [encoding, compressed] of [
    ["gzip", gzipSync(json)],
    ["x-gzip", gzipSync(json)],
    [" GZIP ", gzipSync(json)],
    ["deflate", deflateSync(json)],
    ["br", brotliCompressSync(json)],
  ] as const) {
    const decoded = decode(compressed, encoding, 1024);
    assert.deepEqual(decoded.body, json, encoding);
    assert.deepEqual([decoded.oversized, decoded.fault], [false, undefined]);
  }
});

test("a body that decodes past the cap is oversized, never decoded whole", () => {
  const bomb = gzipSync(Buffer.alloc(1_000_000));
  assert.deepEqual(decode(bomb, "gzip", 1024), { body: undefined, oversized: true, fault: undefined });
});

test("an unknown coding or a body that does not decode is a fault, not a throw", () => {
  assert.deepEqual(decode(json, "zstd", 1024), {
    body: undefined,
    oversized: false,
    fault: "unsupported content-encoding zstd",
  });
  assert.deepEqual(decode(json, "gzip", 1024), {
    body: undefined,
    oversized: false,
    fault: "undecodable gzip body",
  });
});

test("the client gets the backend's end-to-end headers: no hop-by-hop, listed or Access-Control-* ones", () => {
  const backend: IncomingHttpHeaders = {
    "content-type": "application/json",
    "content-length": "20",
    connection: "keep-alive, x-hop, content-length",
    "keep-alive": "timeout=5",
    "transfer-encoding": "chunked",
    "x-hop": "1",
    "x-end-to-end": "2",
    "access-control-allow-origin": "*",
    "access-control-allow-credentials": "true",
    vary: "Accept",
  };
  const copy = endToEnd(backend);
  assert.deepEqual(copy, {
    "content-type": "application/json",
    "content-length": "20",
    "x-end-to-end": "2",
    vary: "Accept",
  });
  // A copy: the backend's answer itself is left as it came.
  assert.equal(backend["x-hop"], "1");
});

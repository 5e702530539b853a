// Key material never comes back out: keys of every shape the key file may hold, placed wherever a
// client (or a backend echoing the client) can put them, written plainly, percent-encoded or
// \u-escaped, leave no 12-character piece of themselves in any log line, any answer the gateway
// writes, /metrics, /deprecations or /contract/violations, nor in any span the gateway exports
// (its attributes, events, trace state and resource, as a collector decodes them, and the raw bytes),
// in proxy mode and in decision mode.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { CARRIED_ANSWER_HEADER } from "../src/decision/carried-answer.ts";
import { type OtlpReceiver, startOtlpReceiver } from "./fixtures/otlp-receiver.ts";
import {
  jsonAnswer,
  type ProgrammableBackend,
  startProgrammableBackend,
} from "./fixtures/programmable-backend.ts";
import { eventually } from "./support/eventually.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { type ApiKey, writeKeysFile, writeKeysFileAt } from "./support/keys.ts";
import { spanTexts } from "./support/secrets.ts";
import { exportingTo } from "./support/tracing.ts";

const CLIENT_TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const HTTP_CASES = Math.max(60, Math.round(600 * Number(process.env.PROPERTY_SCALE ?? 0.1)));

const generated = writeKeysFile(["acme"]);
const caller = generated.keyOf("acme");
const randomOf = (alphabet: string, length: number) =>
  Array.from(randomBytes(length), (byte) => alphabet[byte % alphabet.length]).join("");
// Keys of every shape: as the CLI makes them, and short ones that only the key file can tell
// from other text (digits only, letters only, under the length a key-shaped run is redacted at).
const placed: ApiKey[] = [
  { consumer: "cli", key: `pgw_${randomBytes(32).toString("base64url")}` },
  { consumer: "digits", key: randomOf("0123456789", 20) },
  { consumer: "letters", key: randomOf("abcdefghijklmnopqrstuvwxyz", 22) },
  { consumer: "dashes", key: `${randomOf("abcdef", 10)}-_-${randomOf("0123456789", 10)}` },
  // Lower-case hex, 32 digits: a trace id's shape.
  { consumer: "hex", key: randomBytes(16).toString("hex") },
];
// Not in the key file: a key the client believes in, sent as its own credential.
const unknownOwn = `own_${randomBytes(20).toString("base64url")}`;
const nonAscii = "clé-secrète-für-ünïcödé-schlüssel";
writeKeysFileAt(generated.file, [...generated.keys, ...placed, { consumer: "unicode", key: nonAscii }]);

const percentEncoded = (key: string) =>
  [...key].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`).join("");
const unicodeEscaped = (key: string) =>
  [...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
const ENCODINGS = {
  plain: (key: string) => key,
  percent: percentEncoded,
  "half-percent": (key: string) =>
    [...key].map((c, i) => (i % 2 === 0 ? c : `%${c.charCodeAt(0).toString(16)}`)).join(""),
} as const;

interface Placement {
  readonly path: string;
  /** The request's own credential, when the placement is about it. */
  readonly credential?: string;
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

/** Where a client can put a key: each placement builds one request around the key as written. */
const PLACEMENTS: Readonly<Record<string, (written: string, key: string) => Placement>> = {
  "query name": (written) => ({ path: `/pets?${written}=1` }),
  "query value": (written) => ({ path: `/pets?status=${written}` }),
  "credential-named query value": (written) => ({ path: `/pets?api_key=${written}` }),
  "path parameter": (written) => ({ path: `/pets/${written}` }),
  "any header, echoed by the backend": (_, key) => ({ path: "/pets/1", headers: { "x-echo": key } }),
  "user agent of the deprecated operation": (_, key) => ({
    path: "/pets/1",
    headers: { "user-agent": `curl/8 ${key}` },
  }),
  "request id": (_, key) => ({ path: "/pets/1", headers: { "x-request-id": key } }),
  "JSON member name": (_, key) => ({
    path: "/pets",
    method: "POST",
    body: `{"name":"Rex","categoryId":1,"${key}":1}`,
  }),
  "JSON member name, \\u-escaped": (_, key) => ({
    path: "/pets",
    method: "POST",
    body: `{"name":"Rex","categoryId":1,"${unicodeEscaped(key)}":1}`,
  }),
  "JSON member value": (_, key) => ({
    path: "/pets",
    method: "POST",
    body: `{"name":"Rex","categoryId":"${key}"}`,
  }),
  "JSON member value, \\u-escaped": (_, key) => ({
    path: "/pets",
    method: "POST",
    body: `{"name":"Rex","categoryId":"${unicodeEscaped(key)}"}`,
  }),
  "invalid JSON echoed by the backend": (_, key) => ({
    path: "/pets/1",
    headers: { "x-echo": key, "x-echo-as": "bare" },
  }),
  // The trace context goes into the log line and the span: a key in the trace state, and a key
  // of hex digits as the trace id (any other key makes the traceparent invalid, and it is dropped).
  "trace state": (written) => ({
    path: "/pets",
    headers: { traceparent: CLIENT_TRACEPARENT, tracestate: `congo=1,vendor=${written}` },
  }),
  "trace id": (written) => ({
    path: "/pets",
    headers: { traceparent: `00-${written}-00f067aa0ba902b7-01` },
  }),
  "trace id around the request's own key": (written, key) => ({
    path: "/pets",
    credential: key,
    headers: { traceparent: `00-${written.padEnd(32, "0").slice(0, 32)}-00f067aa0ba902b7-01` },
  }),
};

/** The backend echoes X-Echo and the User-Agent into answers that break the contract. */
function echoingBackend(req: { url: string; headers: Record<string, string | string[] | undefined> }) {
  const echo = String(req.headers["x-echo"] ?? req.headers["user-agent"] ?? "");
  if (req.headers["x-echo-as"] === "bare") return jsonAnswer(200, `{"id":1,"name":${echo}}`);
  if (/\/pets\/[^/]+$/.test(req.url.split("?")[0] ?? "")) {
    // No name (the excerpt shows the object, member names included) and a string id.
    return jsonAnswer(200, JSON.stringify({ [echo]: echo, id: echo, categoryId: 1 }));
  }
  return jsonAnswer(200, JSON.stringify([{ id: 1, name: "Rex", categoryId: 1 }]));
}

/** Outputs with their escapes read as the characters they stand for, as a reader would see them. */
function readable(text: string): string {
  return text.replace(/%([0-9A-Fa-f]{2})|\\u([0-9A-Fa-f]{4})/g, (_, pct?: string, u?: string) =>
    String.fromCharCode(Number.parseInt(pct ?? u ?? "", 16)),
  );
}

function pieceOf(keys: readonly string[], text: string): string | undefined {
  const shown = readable(text);
  for (const key of keys) {
    for (let at = 0; at + 12 <= key.length; at++) {
      const piece = key.slice(at, at + 12);
      if (text.includes(piece) || shown.includes(piece)) return piece;
    }
  }
  return undefined;
}

/**
 * One case of the property: a key placed somewhere in a request, in one encoding, sent with one
 * credential (the caller's own key, the placed key, a key the file does not know, or none).
 */
interface PlacedKey {
  readonly key: string;
  readonly placement: Placement;
  readonly authorization: string | undefined;
  /** Where, how encoded, with which credential: for an assertion's message. */
  readonly label: string;
}

function placedKeys(): fc.Arbitrary<PlacedKey> {
  return fc
    .record({
      key: fc.constantFrom(...placed.map(({ key }) => key)),
      where: fc.constantFrom(...Object.keys(PLACEMENTS)),
      encoding: fc.constantFrom(...(Object.keys(ENCODINGS) as (keyof typeof ENCODINGS)[])),
      credential: fc.constantFrom("caller", "placed", "unknown", "none"),
    })
    .map(({ key, where, encoding, credential }) => {
      const placement = (PLACEMENTS[where] as (typeof PLACEMENTS)[string])(ENCODINGS[encoding](key), key);
      const own = { caller, placed: key, unknown: unknownOwn, none: undefined }[credential];
      return {
        key,
        placement,
        authorization: placement.credential ?? own,
        label: `${where} (${encoding}, ${credential})`,
      };
    });
}

describe("no piece of a key comes out of the gateway", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let receiver: OtlpReceiver;
  /** What the gateway itself wrote to clients: every answer's headers, and the bodies it wrote. */
  const answers: string[] = [];

  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave((req) => echoingBackend(req));
    receiver = await startOtlpReceiver();
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys: generated,
      config: { policies: { auth: { reloadIntervalMs: 4_000 } } },
      // Every request a span, exported as the gateway does by default (http/protobuf).
      tracing: exportingTo(receiver.url),
    });
  });
  after(async () => {
    await gw?.close();
    await backend?.close();
    await receiver?.close();
  });

  test("keys placed anywhere, in any encoding, with any credential, over HTTP", async () => {
    const keys = placed.map(({ key }) => key);
    await fc.assert(
      fc.asyncProperty(placedKeys(), async ({ key, placement, authorization, label }) => {
        const answer = await request(`${gw.url}${placement.path}`, {
          method: placement.method ?? "GET",
          headers: {
            ...placement.headers,
            ...(authorization === undefined ? {} : { authorization: `Bearer ${authorization}` }),
          },
          ...(placement.body === undefined ? {} : { body: placement.body }),
        });
        const written = [JSON.stringify(answer.headers)];
        // A 2xx or 3xx body is the backend's own (it echoes on purpose); an error body is the gateway's.
        if (answer.status >= 400) written.push(answer.body);
        answers.push(...written);
        const found = pieceOf([key], written.join("\n"));
        assert.equal(found, undefined, `${label}: ${answer.status} ${written.join(" ")}`);
      }),
      { numRuns: HTTP_CASES },
    );

    const ops = await Promise.all(
      ["/metrics", "/deprecations", "/deprecations?format=csv", "/contract/violations"].map((path) =>
        request(`${gw.opsUrl}${path}`),
      ),
    );
    for (const answer of ops) assert.equal(answer.status, 200);
    // Every request's server span, in the receiver: what the collector got is all there is to read.
    const requests = gw.logs.messages("request").length;
    await eventually(
      "every request's span exported",
      () => receiver.counts().serverSpans >= requests,
      15_000,
    );
    assert.deepEqual(receiver.failures, [], "every export decoded");
    const outputs = [...gw.logs.raw, ...answers, ...ops.map((answer) => answer.body), ...spanTexts(receiver)];
    // The run did reach the places keys were put: contract violations, deprecated calls, 400s.
    const messages = new Set(gw.logs.lines.map((line) => line.msg));
    for (const message of ["contract violation", "deprecated call", "request"]) {
      assert.ok(messages.has(message), `no "${message}" line: ${[...messages].join(", ")}`);
    }
    for (const output of outputs) {
      const piece = pieceOf([...keys, unknownOwn], output);
      assert.equal(piece, undefined, `a piece of a key (${piece}) in: ${output.slice(0, 400)}`);
    }
    console.log(
      `${HTTP_CASES} requests; ${outputs.length} outputs checked, ${gw.logs.raw.length} log lines, ${receiver.spans.length} spans`,
    );
  });

  test("a key beyond ASCII authenticates: its UTF-8 bytes are what the key file's digest is of", async () => {
    // What Node hands the gateway is the bytes read as latin1; hashing that text as UTF-8 (as
    // before) gives another digest than the key file's, so this request tells the two apart.
    const asNodeReadsIt = Buffer.from(nonAscii, "utf8").toString("latin1");
    assert.notEqual(
      createHash("sha256").update(asNodeReadsIt, "utf8").digest("hex"),
      createHash("sha256").update(nonAscii, "utf8").digest("hex"),
      "the key's bytes beyond ASCII make the two readings differ",
    );
    const { port } = new URL(gw.url);
    const status = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () => {
        // Written, not ended: a client that half-closes has left, for the gateway.
        socket.write(
          Buffer.concat([
            Buffer.from("GET /v1/pets HTTP/1.1\r\nHost: gw\r\nConnection: close\r\nAuthorization: Bearer "),
            Buffer.from(nonAscii, "utf8"),
            Buffer.from("\r\n\r\n"),
          ]),
        );
      });
      let head = "";
      socket.on("data", (chunk) => {
        head += chunk.toString("latin1");
      });
      socket.on("end", () => resolve(head.split("\r\n")[0] ?? ""));
      socket.on("error", reject);
    });
    assert.equal(status, "HTTP/1.1 200 OK", gw.logs.raw.slice(-3).join("\n"));
    const line = gw.logs.messages("request").at(-1);
    assert.equal(line?.consumer, "unicode");
  });
});

// Decision mode: the same placements, in the calls nginx's auth_request and Envoy's ext_authz make
// (the original request in X-Original-URI, or after Envoy's path prefix), to a decision service
// exporting a span per decision. An allow answer tells the proxy the credential the backend gets,
// as it must; a refusal, the log lines and every span hold no piece of a key.
describe("no piece of a key comes out of a decision", () => {
  let gw: TestGateway;
  let receiver: OtlpReceiver;
  let closed = false;
  const refusals: string[] = [];

  before(async () => {
    receiver = await startOtlpReceiver();
    gw = await startGateway({
      upstreamUrl: "",
      keys: generated,
      config: { mode: "decision", server: { trustedProxies: ["127.0.0.1"] } },
      tracing: exportingTo(receiver.url),
    });
  });
  after(async () => {
    if (!closed) await gw?.close();
    await receiver?.close();
  });

  test("keys placed anywhere in the original request, through nginx's and Envoy's doors", async () => {
    const keys = placed.map(({ key }) => key);
    await fc.assert(
      fc.asyncProperty(
        placedKeys(),
        fc.constantFrom("nginx", "envoy"),
        async ({ key, placement, authorization, label }, door) => {
          const method = placement.method ?? "GET";
          const headers = {
            ...placement.headers,
            "x-forwarded-for": "203.0.113.9",
            ...(authorization === undefined ? {} : { authorization: `Bearer ${authorization}` }),
          };
          // nginx sends no body; Envoy sends it (with_request_body).
          const answer =
            door === "nginx"
              ? await request(`${gw.origin}/decide/nginx`, {
                  headers: {
                    ...headers,
                    "x-original-method": method,
                    "x-original-uri": `/v1${placement.path}`,
                  },
                })
              : await request(`${gw.origin}/decide/envoy/v1${placement.path}`, {
                  method,
                  headers,
                  ...(placement.body === undefined ? {} : { body: placement.body }),
                });
          if (answer.status === 200) return;
          // What the client is shown: through nginx, the answer the 403 carries.
          const carried = answer.headers[CARRIED_ANSWER_HEADER];
          const shown =
            typeof carried === "string"
              ? Buffer.from(carried, "base64").toString("utf8")
              : `${JSON.stringify(answer.headers)}\n${answer.body}`;
          refusals.push(shown);
          const found = pieceOf([key], shown);
          assert.equal(found, undefined, `${door}, ${label}: ${answer.status} ${shown}`);
        },
      ),
      { numRuns: HTTP_CASES },
    );

    // Closing flushes the spans still queued, without the wait for the next batch.
    closed = true;
    await gw.close();
    assert.equal(receiver.counts().serverSpans, gw.logs.messages("request").length, "every decision's span");
    assert.deepEqual(receiver.failures, [], "every export decoded");
    assert.ok(refusals.length > 0, "some placements were refused");
    for (const output of [...gw.logs.raw, ...refusals, ...spanTexts(receiver)]) {
      const piece = pieceOf([...keys, unknownOwn], output);
      assert.equal(piece, undefined, `a piece of a key (${piece}) in: ${output.slice(0, 400)}`);
    }
  });
});

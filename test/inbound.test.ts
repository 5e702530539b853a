// The inbound policies end to end: bearer API keys (failure modes, rotation, expiry, reloads,
// what reaches the backend), request validation (a table of bad requests) and the `limit`
// parameter, each through a real gateway in front of a real backend. The last test greps
// everything the gateways wrote for keys and digests. A 100,000-key file: test/slow/many-keys.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import http from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { DEFAULT_OPENAPI_FILE } from "../src/project-files.ts";
import { PET } from "./fixtures/contract-answer.ts";
import {
  type Behaviour,
  type ProgrammableBackend,
  type RecordedRequest,
  startProgrammableBackend,
} from "./fixtures/programmable-backend.ts";
import { eventually } from "./support/eventually.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { type Answer, answerOf, request } from "./support/http.ts";
import { sha256 } from "./support/keys.ts";
import { type Sample, sampleValue, scrape } from "./support/metrics.ts";
import { rawExchange } from "./support/raw-socket.ts";
import { makeFifo } from "./support/stuck-reads.ts";

// Everything secret this file makes, and everything the gateways said, for the final grep.
const clearKeys = new Set<string>();
const digests = new Set<string>();
const started: TestGateway[] = [];
const errorBodies: string[] = [];
const metricsTexts: string[] = [];

const directory = mkdtempSync(join(tmpdir(), "gw-inbound-"));
after(() => rmSync(directory, { recursive: true, force: true }));

interface KeySpec {
  readonly consumer: string;
  readonly key: string;
  readonly notAfter?: string;
}

function newKey(consumer: string, notAfter?: string): KeySpec {
  const key = `test_${randomBytes(24).toString("base64url")}`;
  clearKeys.add(key);
  digests.add(sha256(key));
  return notAfter === undefined ? { consumer, key } : { consumer, key, notAfter };
}

function keyFileText(keys: readonly KeySpec[]): string {
  const entries = keys.map(({ consumer, key, notAfter }) => ({
    consumer,
    sha256: sha256(key),
    ...(notAfter === undefined ? {} : { notAfter }),
  }));
  return `${JSON.stringify({ keys: entries }, null, 2)}\n`;
}

/** Replaces a file the way an editor or the keys CLI does: a new file renamed over the old one. */
function replaceFile(file: string, text: string): void {
  const temporary = `${file}.${randomBytes(4).toString("hex")}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}

function keysFileWith(name: string, keys: readonly KeySpec[]): string {
  const file = join(directory, name);
  writeFileSync(file, keyFileText(keys));
  return file;
}

async function gatewayFor(
  upstreamUrl: string,
  auth: Record<string, unknown>,
  config: Record<string, unknown> = {},
): Promise<TestGateway> {
  const gw = await startGateway({ upstreamUrl, config: { ...config, policies: { auth } } });
  started.push(gw);
  return gw;
}

/** Keeps what /metrics said for the final grep, then closes. */
async function stop(gw: TestGateway): Promise<void> {
  metricsTexts.push((await request(`${gw.opsUrl}/metrics`)).body);
  await gw.close();
}

interface SendOptions {
  readonly method?: string;
  /** Sent exactly as given: nothing is added but Authorization (from key) and framing. */
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
  readonly chunked?: boolean;
  readonly key?: string;
}

/** One request with exactly these headers; error bodies are kept for the final grep. */
function send(url: string, options: SendOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  if (options.chunked) headers["transfer-encoding"] = "chunked";
  else if (options.body !== undefined) headers["content-length"] = String(Buffer.byteLength(options.body));
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? "GET", headers, agent: false }, (res) => {
      answerOf(res).then((answer) => {
        if (answer.status >= 400) errorBodies.push(answer.body);
        resolve(answer);
      }, reject);
    });
    req.on("error", reject);
    if (options.chunked && options.body !== undefined) {
      req.write(options.body);
      req.end();
    } else req.end(options.body);
  });
}

/**
 * Writes the bytes as they are on a fresh connection and reads the answer until the gateway
 * closes it: for bodies the gateway refuses before they have fully arrived.
 */
function sendRaw(origin: string, bytes: string): Promise<Answer> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      socket.destroy();
      const text = Buffer.concat(chunks).toString("utf8");
      const split = text.indexOf("\r\n\r\n");
      if (split === -1) return reject(new Error(`no complete answer: ${JSON.stringify(text.slice(0, 200))}`));
      const [statusLine = "", ...lines] = text.slice(0, split).split("\r\n");
      const headers: http.IncomingHttpHeaders = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      const body = text.slice(split + 4);
      errorBodies.push(body);
      resolve({
        status: Number(statusLine.split(" ")[1]),
        headers,
        body,
        json: <T>() => JSON.parse(body) as T,
      });
    };
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("end", finish);
    socket.on("close", finish);
    // The gateway may close while bytes are still on their way: what arrived before counts.
    socket.on("error", finish);
    socket.write(bytes);
  });
}

/** The access log line of one request, by the X-Request-Id the test sent. */
function accessLine(gw: TestGateway, requestId: string): Promise<Record<string, unknown>> {
  return eventually(
    `access log line ${requestId}`,
    () => gw.logs.messages("request").find((line) => line.reqId === requestId),
    2000,
  );
}

/** The policies' notes of an access line (src/pipeline/observe.ts writes them under notes). */
function notesOf(line: Record<string, unknown>): Record<string, unknown> {
  return (line.notes ?? {}) as Record<string, unknown>;
}

let requestCounter = 0;
const nextRequestId = (label: string) => `${label}-${++requestCounter}`;

const JSON_HEADERS = { "content-type": "application/json" };
/** Answers the way a Pet Store does, so whatever checks answers later in the chain is satisfied. */
const likeAPetStore = (req: RecordedRequest): Behaviour => {
  if (req.method === "POST") {
    return { kind: "respond", status: 201, headers: JSON_HEADERS, body: JSON.stringify(PET) };
  }
  if (/^\/v1\/pets\/-?\d+/.test(req.url)) {
    return { kind: "respond", status: 200, headers: JSON_HEADERS, body: JSON.stringify(PET) };
  }
  return { kind: "respond", status: 200, headers: JSON_HEADERS, body: JSON.stringify([PET]) };
};

describe("bearer API keys", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  const acme = newKey("acme");
  const acmeNext = newKey("acme");
  const beta = newKey("beta");
  const expired = newKey("legacy", "2020-01-01T00:00:00Z");
  const rotating = newKey("legacy", "2999-01-01T00:00:00Z");

  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(likeAPetStore);
    const keysFile = keysFileWith("auth.json", [acme, acmeNext, beta, expired, rotating]);
    gw = await gatewayFor(backend.url, { keysFile });
  });
  after(async () => {
    await stop(gw);
    await backend.close();
  });

  const refusals: readonly {
    readonly name: string;
    readonly authorization: string | undefined;
    readonly challenge: string;
    readonly code: string;
    readonly note: string;
  }[] = [
    {
      name: "no Authorization header",
      authorization: undefined,
      challenge: "Bearer",
      code: "MISSING_API_KEY",
      note: "no header",
    },
    {
      name: "another scheme (Basic)",
      authorization: "Basic YWNtZTpzZWNyZXQ=",
      challenge: "Bearer",
      code: "MISSING_API_KEY",
      note: "not bearer",
    },
    {
      name: "another scheme (Token)",
      authorization: `Token ${acme.key}`,
      challenge: "Bearer",
      code: "MISSING_API_KEY",
      note: "not bearer",
    },
    {
      name: "the scheme run into the key",
      authorization: `Bearer${acme.key}`,
      challenge: "Bearer",
      code: "MISSING_API_KEY",
      note: "not bearer",
    },
    {
      name: "an empty key",
      authorization: "Bearer",
      challenge: 'Bearer error="invalid_token"',
      code: "INVALID_API_KEY",
      note: "empty key",
    },
    {
      name: "an unknown key",
      authorization: `Bearer test_${randomBytes(24).toString("base64url")}`,
      challenge: 'Bearer error="invalid_token"',
      code: "INVALID_API_KEY",
      note: "unknown key",
    },
    {
      name: "a key's digest instead of the key",
      authorization: `Bearer ${sha256(acme.key)}`,
      challenge: 'Bearer error="invalid_token"',
      code: "INVALID_API_KEY",
      note: "unknown key",
    },
    {
      name: "a valid key with more after it",
      authorization: `Bearer ${acme.key} ${beta.key}`,
      challenge: 'Bearer error="invalid_token"',
      code: "INVALID_API_KEY",
      note: "unknown key",
    },
    {
      name: "a key past its notAfter",
      authorization: `Bearer ${expired.key}`,
      challenge: 'Bearer error="invalid_token"',
      code: "INVALID_API_KEY",
      note: "expired key",
    },
  ];
  const operations = [
    { id: "listPets", method: "GET", path: "/pets" },
    { id: "getPet", method: "GET", path: "/pets/1" },
    { id: "createPet", method: "POST", path: "/pets", body: '{"name":"Rex","categoryId":7}' },
  ];

  for (const refusal of refusals) {
    test(`${refusal.name}: 401 with WWW-Authenticate: ${refusal.challenge}, and the backend never sees it`, async () => {
      for (const operation of operations) {
        const before = backend.requests.length;
        const requestId = nextRequestId("auth");
        const headers: Record<string, string> = { "x-request-id": requestId, ...JSON_HEADERS };
        if (refusal.authorization !== undefined) headers.authorization = refusal.authorization;
        const answer = await send(`${gw.url}${operation.path}`, {
          method: operation.method,
          headers,
          ...(operation.body === undefined ? {} : { body: operation.body }),
        });
        assert.equal(answer.status, 401, `${operation.id}: ${answer.body}`);
        assert.equal(answer.headers["www-authenticate"], refusal.challenge, operation.id);
        assert.equal(answer.json<{ code: string }>().code, refusal.code);
        assert.ok(gw.gateway.api.validateError(answer.json()), answer.body);
        assert.equal(backend.requests.length, before, `${operation.id} reached the backend`);
        const line = await accessLine(gw, requestId);
        assert.equal(line.status, 401);
        assert.equal(notesOf(line).authFailure, refusal.note);
        assert.equal(line.consumer, undefined);
      }
    });
  }

  test("the access log names whose key expired (by name and digest prefix), the client only learns it is invalid", async () => {
    const requestId = nextRequestId("expired");
    const answer = await send(`${gw.url}/pets`, { key: expired.key, headers: { "x-request-id": requestId } });
    assert.equal(answer.status, 401);
    assert.doesNotMatch(answer.body, /expir|legacy/i);
    const line = await accessLine(gw, requestId);
    assert.equal(notesOf(line).keyConsumer, "legacy");
    assert.equal(notesOf(line).keyDigest, sha256(expired.key).slice(0, 8));
  });

  test("authentication comes before the body is read: a huge body without a key gets 401, not 413", async () => {
    const before = backend.requests.length;
    const answer = await sendRaw(
      gw.origin,
      "POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{",
    );
    assert.equal(answer.status, 401);
    assert.equal(answer.headers["www-authenticate"], "Bearer");
    // Not drained: the connection closes instead of reading 10 MB from someone without a key.
    assert.equal(answer.headers.connection, "close");
    assert.equal(backend.requests.length, before);
  });

  test("a POST that declares no body (neither Content-Length nor Transfer-Encoding) is judged at once, not left waiting", async () => {
    const { port } = new URL(gw.origin);
    const outcome = await rawExchange(
      Number(port),
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${acme.key}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n`,
      { waitMs: 2000 },
    );
    assert.equal(
      outcome.responses.length,
      1,
      `one answer within 2 s: ${JSON.stringify(outcome.text.slice(0, 120))}`,
    );
    assert.equal(outcome.responses[0]?.status, 400);
  });

  test("a valid key gets 200, and the scheme name is case-insensitive", async () => {
    for (const scheme of ["Bearer", "bearer", "BEARER", "bEaReR"]) {
      const answer = await send(`${gw.url}/pets`, { headers: { authorization: `${scheme} ${acme.key}` } });
      assert.equal(answer.status, 200, scheme);
      assert.deepEqual(answer.json(), [PET]);
    }
    const spaced = await send(`${gw.url}/pets`, { headers: { authorization: `Bearer   ${acme.key}` } });
    assert.equal(spaced.status, 200, "several spaces after the scheme");
  });

  test("each of a consumer's keys works, so a key can be rotated with overlap", async () => {
    for (const key of [acme, acmeNext]) {
      const answer = await send(`${gw.url}/pets/1`, { key: key.key });
      assert.equal(answer.status, 200);
      assert.equal(backend.requests.at(-1)?.headers["x-consumer"], "acme");
    }
  });

  test("a key with a notAfter in the future is accepted; past it, refused (tested above)", async () => {
    const answer = await send(`${gw.url}/pets`, { key: rotating.key });
    assert.equal(answer.status, 200);
    assert.equal(backend.requests.at(-1)?.headers["x-consumer"], "legacy");
  });

  test("the consumer's name reaches the backend in X-Consumer; a copy sent by the client is removed", async () => {
    const requestId = nextRequestId("consumer");
    const answer = await send(`${gw.url}/pets`, {
      key: beta.key,
      headers: { "x-consumer": "acme", "x-request-id": requestId },
    });
    assert.equal(answer.status, 200);
    const seen = backend.requests.at(-1);
    assert.equal(seen?.headers["x-consumer"], "beta");
    assert.equal((await accessLine(gw, requestId)).consumer, "beta");
  });

  test("Authorization reaches the backend as the client sent it (pass, the default)", async () => {
    await send(`${gw.url}/pets`, { key: acme.key });
    assert.equal(backend.requests.at(-1)?.headers.authorization, `Bearer ${acme.key}`);
  });

  test("replace sends the backend the credential from the named environment variable instead", async () => {
    const credential = `upstream_${randomBytes(16).toString("hex")}`;
    clearKeys.add(credential);
    process.env.INBOUND_TEST_UPSTREAM_KEY = credential;
    const replacing = await gatewayFor(backend.url, {
      keysFile: keysFileWith("replace.json", [acme]),
      upstreamAuthorization: "replace",
      upstreamCredentialEnv: "INBOUND_TEST_UPSTREAM_KEY",
    });
    try {
      assert.equal((await send(`${replacing.url}/pets`, { key: acme.key })).status, 200);
      assert.equal(backend.requests.at(-1)?.headers.authorization, `Bearer ${credential}`);
      assert.equal(backend.requests.at(-1)?.headers["x-consumer"], "acme");
      assert.equal((await send(`${replacing.url}/pets`, { key: credential })).status, 401);
    } finally {
      await stop(replacing);
      delete process.env.INBOUND_TEST_UPSTREAM_KEY;
    }
  });

  test("replace without its variable, or with an empty one, refuses to start", async () => {
    const keysFile = keysFileWith("replace-bad.json", [acme]);
    await assert.rejects(
      startGateway({
        upstreamUrl: backend.url,
        config: { policies: { auth: { keysFile, upstreamAuthorization: "replace" } } },
      }),
      /upstreamCredentialEnv/,
    );
    await assert.rejects(
      startGateway({
        upstreamUrl: backend.url,
        config: {
          policies: {
            auth: { keysFile, upstreamAuthorization: "replace", upstreamCredentialEnv: "INBOUND_TEST_UNSET" },
          },
        },
      }),
      /INBOUND_TEST_UNSET is empty/,
    );
  });

  test("strip sends the backend no Authorization at all", async () => {
    const stripping = await gatewayFor(backend.url, {
      keysFile: keysFileWith("strip.json", [acme]),
      upstreamAuthorization: "strip",
    });
    try {
      assert.equal((await send(`${stripping.url}/pets`, { key: acme.key })).status, 200);
      assert.equal(backend.requests.at(-1)?.headers.authorization, undefined);
      assert.equal(backend.requests.at(-1)?.headers["x-consumer"], "acme");
    } finally {
      await stop(stripping);
    }
  });

  test("without a key file the gateway does not start; a broken one is named without being quoted", async () => {
    await assert.rejects(startGateway({ upstreamUrl: backend.url, keys: false }), /API_KEYS_FILE/);
    const broken = join(directory, "broken.json");
    const digest = sha256(acme.key);
    writeFileSync(broken, `{"keys":[{"consumer":"acme","sha256":"${digest}"},]}`);
    await assert.rejects(
      startGateway({ upstreamUrl: backend.url, config: { policies: { auth: { keysFile: broken } } } }),
      (error: Error) => {
        assert.match(error.message, /broken\.json: \/keys\/1 is not valid JSON \(line 1, column 106\)$/);
        assert.ok(!error.message.includes(digest.slice(0, 12)), error.message);
        return true;
      },
    );
    writeFileSync(
      broken,
      JSON.stringify({
        keys: [
          { consumer: "acme", sha256: digest },
          { consumer: "b", sha256: digest },
        ],
      }),
    );
    await assert.rejects(
      startGateway({ upstreamUrl: backend.url, config: { policies: { auth: { keysFile: broken } } } }),
      /\/keys\/1\/sha256 repeats the digest of \/keys\/0/,
    );
    writeFileSync(broken, JSON.stringify({ keys: [{ consumer: "acme", sha256: digest, notAfter: "soon" }] }));
    await assert.rejects(
      startGateway({ upstreamUrl: backend.url, config: { policies: { auth: { keysFile: broken } } } }),
      /\/keys\/0\/notAfter must match format "date-time"/,
    );
  });
});

describe("a valid key through to the demo backend process", () => {
  let gw: TestGateway;
  const key = newKey("demo-user");
  before(async () => {
    gw = await startGateway({
      config: { policies: { auth: { keysFile: keysFileWith("demo.json", [key]) } } },
    });
    started.push(gw);
  });
  after(() => stop(gw));

  test("a valid key gets the backend's 200; without one the backend is not asked", async () => {
    const answer = await send(`${gw.url}/pets?status=available`, { key: key.key });
    assert.equal(answer.status, 200);
    assert.ok(answer.json<{ status: string }[]>().every((pet) => pet.status === "available"));
    assert.equal((await send(`${gw.url}/pets`)).status, 401);
  });
});

// Each test has a gateway and a key file of its own: their waits for a poll run side by side.
describe("reloading the key file", { concurrency: true }, () => {
  let backend: ProgrammableBackend;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(likeAPetStore);
  });
  after(() => backend.close());

  const statusWith = async (gw: TestGateway, key: KeySpec) =>
    (await send(`${gw.url}/pets`, { key: key.key })).status;

  test("a key removed from the file is refused within 5 s, without a restart (default polling)", async (t) => {
    const kept = newKey("kept");
    const revoked = newKey("revoked");
    const file = keysFileWith("revoke.json", [kept, revoked]);
    const gw = await gatewayFor(backend.url, { keysFile: file });
    try {
      assert.equal(await statusWith(gw, revoked), 200);
      const changedAt = performance.now();
      replaceFile(file, keyFileText([kept]));
      await eventually("the revoked key refused", async () => (await statusWith(gw, revoked)) === 401);
      t.diagnostic(`revoked key refused ${Math.round(performance.now() - changedAt)} ms after the change`);
      assert.equal(await statusWith(gw, kept), 200);
      const reload = gw.logs.messages("api keys reloaded").at(-1);
      assert.deepEqual(
        { keys: reload?.keys, added: reload?.added, removed: reload?.removed, why: reload?.why },
        { keys: 1, added: 0, removed: 1, why: "file changed" },
      );
    } finally {
      await stop(gw);
    }
  });

  test("a reload that fails keeps the last good keys and logs why; the next good file is taken", async () => {
    const first = newKey("first");
    const second = newKey("second");
    const file = keysFileWith("broken-reload.json", [first]);
    const gw = await gatewayFor(backend.url, { keysFile: file, reloadIntervalMs: 100 });
    try {
      const failures = () => gw.logs.messages("api key reload failed; keeping the previous keys");
      replaceFile(file, '{"keys": [{"consumer": "first", "sha2');
      const broken = await eventually("a failed reload logged", () => failures()[0]);
      assert.equal(broken.level, "error");
      assert.match(String(broken.error), /^\/keys\/0 is not valid JSON \(it ends too early\)$/);
      assert.equal(broken.keys, 1);
      assert.equal(await statusWith(gw, first), 200);

      replaceFile(file, JSON.stringify({ keys: [{ consumer: "first", sha256: second.key }] }));
      const invalid = await eventually("a second failed reload logged", () => failures()[1]);
      assert.match(String(invalid.error), /^\/keys\/0\/sha256 must match pattern/);
      assert.equal(await statusWith(gw, first), 200);
      assert.equal(await statusWith(gw, second), 401);

      const samples = await scrape(gw);
      assert.equal(sampleValue(samples, "gateway_api_key_reloads_total", { result: "error" }), 2);
      assert.equal(sampleValue(samples, "gateway_api_keys"), 1);

      replaceFile(file, keyFileText([second]));
      await eventually("the fixed file's key accepted", async () => (await statusWith(gw, second)) === 200);
      assert.equal(await statusWith(gw, first), 401);
    } finally {
      await stop(gw);
    }
  });

  test("a Kubernetes-style Secret update (the ..data symlink swapped to a new directory) is picked up", async () => {
    // The layout kubelet gives a mounted Secret: the file is a symlink through ..data, and an
    // update swaps ..data to a new timestamped directory in one rename.
    const mount = join(directory, "secret-mount");
    mkdirSync(join(mount, "..2026_01_01_00_00_00.1"), { recursive: true });
    const before = newKey("before");
    const afterSwap = newKey("after");
    writeFileSync(join(mount, "..2026_01_01_00_00_00.1", "api-keys.json"), keyFileText([before]));
    symlinkSync("..2026_01_01_00_00_00.1", join(mount, "..data"));
    symlinkSync("..data/api-keys.json", join(mount, "api-keys.json"));
    const gw = await gatewayFor(backend.url, {
      keysFile: join(mount, "api-keys.json"),
      reloadIntervalMs: 200,
    });
    try {
      assert.equal(await statusWith(gw, before), 200);
      mkdirSync(join(mount, "..2026_01_02_00_00_00.2"));
      writeFileSync(join(mount, "..2026_01_02_00_00_00.2", "api-keys.json"), keyFileText([afterSwap]));
      symlinkSync("..2026_01_02_00_00_00.2", join(mount, "..data_tmp"));
      renameSync(join(mount, "..data_tmp"), join(mount, "..data"));
      rmSync(join(mount, "..2026_01_01_00_00_00.1"), { recursive: true });
      await eventually(
        "the new Secret's key accepted",
        async () => (await statusWith(gw, afterSwap)) === 200,
      );
      assert.equal(await statusWith(gw, before), 401);
    } finally {
      await stop(gw);
    }
  });

  test("a key file swapped for a FIFO nobody writes is refused, not waited on; the next regular file is taken", async () => {
    const kept = newKey("kept");
    const revoked = newKey("revoked");
    const file = keysFileWith("fifo-reload.json", [kept, revoked]);
    const gw = await gatewayFor(backend.url, { keysFile: file, reloadIntervalMs: 100 });
    try {
      const fifo = `${file}.fifo`;
      makeFifo(fifo);
      renameSync(fifo, file);
      const failures = () => gw.logs.messages("api key reload failed; keeping the previous keys");
      const refused = await eventually("the FIFO refused and logged", () => failures()[0]);
      assert.equal(
        refused.error,
        "the file is a FIFO (named pipe), not a regular file: the gateway reads only regular files, which cannot block it",
      );
      assert.equal(await statusWith(gw, revoked), 200, "the last good keys are kept");
      replaceFile(file, keyFileText([kept]));
      await eventually("the revoked key refused", async () => (await statusWith(gw, revoked)) === 401);
      assert.equal(await statusWith(gw, kept), 200);
      assert.equal(failures().length, 1, "the FIFO is reported once, not every poll");
    } finally {
      await stop(gw);
    }
  });

  test("a reload asked for (what SIGHUP does) reads the file at once", async () => {
    const old = newKey("old");
    const fresh = newKey("fresh");
    const file = keysFileWith("sighup.json", [old]);
    const gw = await gatewayFor(backend.url, { keysFile: file, reloadIntervalMs: 4000 });
    try {
      replaceFile(file, keyFileText([fresh]));
      await gw.gateway.reload("SIGHUP");
      assert.ok(gw.logs.messages("api keys reloaded").find((line) => line.why === "SIGHUP"));
      assert.equal(await statusWith(gw, fresh), 200);
      assert.equal(await statusWith(gw, old), 401);
    } finally {
      await stop(gw);
    }
  });
});

describe("request validation: bad requests never reach the backend", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  const key = newKey("validator");
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(likeAPetStore);
    gw = await gatewayFor(backend.url, { keysFile: keysFileWith("validation.json", [key]) });
  });
  after(async () => {
    await stop(gw);
    await backend.close();
  });

  interface BadRequest {
    readonly name: string;
    readonly method?: string;
    readonly path: string;
    readonly headers?: Record<string, string>;
    readonly body?: string | Buffer;
    readonly chunked?: boolean;
    /** Bytes after the request line and Host, for what a client library would not send. */
    readonly raw?: string;
    readonly status: number;
    readonly code: string;
    /** What the message must say: the field (or header, or body) and what is wrong with it. */
    readonly says: RegExp;
  }
  const json = { "content-type": "application/json" };
  const post = (name: string, body: string | Buffer, code: string, says: RegExp): BadRequest => ({
    name,
    method: "POST",
    path: "/pets",
    headers: json,
    body,
    status: 400,
    code,
    says,
  });
  const petId = (text: string, says = /^petId must be an integer$/): BadRequest => ({
    name: `petId ${text}`,
    path: `/pets/${text}`,
    status: 400,
    code: "INVALID_PARAMETER",
    says,
  });
  const query = (text: string, code: string, says: RegExp, path = "/pets"): BadRequest => ({
    name: `${path}?${text}`,
    path: `${path}?${text}`,
    status: 400,
    code,
    says,
  });
  const STATUS_ENUM = /^status must be one of available, pending, sold$/;
  const BODY_STATUS_ENUM = /^\/status must be one of available, pending, sold$/;
  const LIMIT = /^limit must be an integer$/;
  const INT64 = /^petId must be within the int64 range$/;
  const LITERAL = /^\/categoryId must be written as an integer literal \(got .+\)$/;
  const oversized = `{"name":"${"x".repeat(70_000)}","categoryId":1}`;

  const table: readonly BadRequest[] = [
    // getPet: petId is an int64 written as an integer literal.
    petId("abc"),
    petId("1.5"),
    petId("1.0"),
    petId("1e3"),
    petId("+5"),
    petId("007"),
    petId("0x1A"),
    petId("-"),
    petId("9223372036854775808", INT64),
    petId("-9223372036854775809", INT64),
    // listPets: status is one of the enum.
    query("status=lost", "INVALID_PARAMETER", STATUS_ENUM),
    query("status=", "INVALID_PARAMETER", STATUS_ENUM),
    query("status=Available", "INVALID_PARAMETER", STATUS_ENUM),
    query("status=available%2Csold", "INVALID_PARAMETER", STATUS_ENUM),
    // listPets: limit is clamped when out of range, but must be an integer literal.
    query("limit=abc", "INVALID_PARAMETER", LIMIT),
    query("limit=1.5", "INVALID_PARAMETER", LIMIT),
    query("limit=1e3", "INVALID_PARAMETER", LIMIT),
    query("limit=", "INVALID_PARAMETER", LIMIT),
    query("limit=%2B5", "INVALID_PARAMETER", LIMIT),
    query("limit=007", "INVALID_PARAMETER", LIMIT),
    query("limit=0x10", "INVALID_PARAMETER", LIMIT),
    query("limit=%205", "INVALID_PARAMETER", LIMIT),
    // Unknown and repeated query parameters.
    query("color=brown", "UNKNOWN_PARAMETER", /^query parameter color is not part of listPets$/),
    query("expand=owner", "UNKNOWN_PARAMETER", /^query parameter expand is not part of getPet$/, "/pets/1"),
    {
      ...post(
        "createPet with a query parameter",
        '{"name":"Rex","categoryId":1}',
        "UNKNOWN_PARAMETER",
        /dryRun/,
      ),
      path: "/pets?dryRun=true",
    },
    query(
      "status=sold&status=sold",
      "DUPLICATE_PARAMETER",
      /^query parameter status is given more than once$/,
    ),
    query("limit=5&limit=6", "DUPLICATE_PARAMETER", /^query parameter limit is given more than once$/),
    query("x=1&x=2", "DUPLICATE_PARAMETER", /^query parameter x is given more than once$/, "/pets/1"),
    // Bodies where the operation takes none.
    {
      name: "GET /pets with a body",
      path: "/pets",
      headers: json,
      body: "{}",
      status: 400,
      code: "BODY_NOT_ALLOWED",
      says: /^listPets takes no request body$/,
    },
    {
      name: "GET /pets/1 with a chunked body",
      path: "/pets/1",
      headers: json,
      body: "{}",
      chunked: true,
      status: 400,
      code: "BODY_NOT_ALLOWED",
      says: /^getPet takes no request body$/,
    },
    // createPet: media type.
    {
      ...post(
        "a body without Content-Type",
        '{"name":"Rex","categoryId":1}',
        "UNSUPPORTED_MEDIA_TYPE",
        /Content-Type: application\/json/,
      ),
      headers: {},
      status: 415,
    },
    {
      ...post(
        "a text/plain body",
        '{"name":"Rex","categoryId":1}',
        "UNSUPPORTED_MEDIA_TYPE",
        /Content-Type: application\/json/,
      ),
      headers: { "content-type": "text/plain" },
      status: 415,
    },
    {
      ...post(
        "a form body",
        "name=Rex&categoryId=1",
        "UNSUPPORTED_MEDIA_TYPE",
        /Content-Type: application\/json/,
      ),
      headers: { "content-type": "application/x-www-form-urlencoded" },
      status: 415,
    },
    {
      ...post(
        "an application/json-patch+json body",
        "[]",
        "UNSUPPORTED_MEDIA_TYPE",
        /Content-Type: application\/json/,
      ),
      headers: { "content-type": "application/json-patch+json" },
      status: 415,
    },
    // createPet: the body is JSON, UTF-8, an object.
    {
      name: "no body at all",
      method: "POST",
      path: "/pets",
      headers: json,
      status: 400,
      code: "INVALID_BODY",
      says: /^the request body is required$/,
    },
    post(
      "truncated JSON",
      '{"name":"Rex",',
      "MALFORMED_JSON",
      /^body is not valid JSON \(it ends too early\)$/,
    ),
    post(
      "a missing comma",
      '{"name":"Rex" "categoryId":1}',
      "MALFORMED_JSON",
      /^\/name is not valid JSON \(line 1, column 15\)$/,
    ),
    post(
      "a trailing comma",
      '{"name":"Rex","categoryId":1,}',
      "MALFORMED_JSON",
      /^body is not valid JSON \(line 1, column 30\)$/,
    ),
    post(
      "bytes that are not UTF-8",
      Buffer.from('{"name":"R\xffx","categoryId":1}', "latin1"),
      "MALFORMED_JSON",
      /^body is not valid UTF-8$/,
    ),
    post("an array", "[]", "INVALID_BODY", /^body must be object$/),
    post("null", "null", "INVALID_BODY", /^body must be object$/),
    post("a string", '"Rex"', "INVALID_BODY", /^body must be object$/),
    // NewPet: required fields.
    post("an empty object", "{}", "INVALID_BODY", /^body must have required property 'name'$/),
    post(
      "no categoryId",
      '{"name":"Rex"}',
      "INVALID_BODY",
      /^body must have required property 'categoryId'$/,
    ),
    post("no name", '{"categoryId":1}', "INVALID_BODY", /^body must have required property 'name'$/),
    // NewPet.name is a string.
    post("name a number", '{"name":5,"categoryId":1}', "INVALID_BODY", /^\/name must be string$/),
    post("name null", '{"name":null,"categoryId":1}', "INVALID_BODY", /^\/name must be string$/),
    post("name an array", '{"name":["Rex"],"categoryId":1}', "INVALID_BODY", /^\/name must be string$/),
    // NewPet.categoryId is an int64 integer literal.
    post(
      "categoryId a string",
      '{"name":"Rex","categoryId":"1"}',
      "INVALID_BODY",
      /^\/categoryId must be integer$/,
    ),
    post(
      "categoryId 1.5",
      '{"name":"Rex","categoryId":1.5}',
      "INVALID_BODY",
      /^\/categoryId must be integer$/,
    ),
    post(
      "categoryId null",
      '{"name":"Rex","categoryId":null}',
      "INVALID_BODY",
      /^\/categoryId must be integer$/,
    ),
    post(
      "categoryId true",
      '{"name":"Rex","categoryId":true}',
      "INVALID_BODY",
      /^\/categoryId must be integer$/,
    ),
    post("categoryId 1.0", '{"name":"Rex","categoryId":1.0}', "INVALID_BODY", LITERAL),
    post("categoryId 1e3", '{"name":"Rex","categoryId":1e3}', "INVALID_BODY", LITERAL),
    post("categoryId 1e30", '{"name":"Rex","categoryId":1e30}', "INVALID_BODY", LITERAL),
    post("categoryId -0.0", '{"name":"Rex","categoryId":-0.0}', "INVALID_BODY", LITERAL),
    post(
      "categoryId +5",
      '{"name":"Rex","categoryId":+5}',
      "MALFORMED_JSON",
      /^\/categoryId is not valid JSON \(line 1, column 28\)$/,
    ),
    post(
      "categoryId 007",
      '{"name":"Rex","categoryId":007}',
      "MALFORMED_JSON",
      /^\/categoryId is not valid JSON \(line 1, column 29\)$/,
    ),
    post(
      "categoryId 2^63",
      '{"name":"Rex","categoryId":9223372036854775808}',
      "INVALID_BODY",
      /^\/categoryId must be within the int64 range$/,
    ),
    post(
      "categoryId -2^63-1",
      '{"name":"Rex","categoryId":-9223372036854775809}',
      "INVALID_BODY",
      /^\/categoryId must be within the int64 range$/,
    ),
    // NewPet.status is one of the enum.
    post("status lost", '{"name":"Rex","categoryId":1,"status":"lost"}', "INVALID_BODY", BODY_STATUS_ENUM),
    post("status empty", '{"name":"Rex","categoryId":1,"status":""}', "INVALID_BODY", BODY_STATUS_ENUM),
    post(
      "status a number",
      '{"name":"Rex","categoryId":1,"status":1}',
      "INVALID_BODY",
      /^\/status must be string$/,
    ),
    // Unknown and dangerous members.
    post(
      "an unknown field",
      '{"name":"Rex","categoryId":1,"color":"brown"}',
      "INVALID_BODY",
      /^body must not have the property 'color'$/,
    ),
    post(
      "an id, which the service assigns",
      '{"id":1,"name":"Rex","categoryId":1}',
      "INVALID_BODY",
      /^body must not have the property 'id'$/,
    ),
    post(
      "__proto__",
      '{"name":"Rex","categoryId":1,"__proto__":{"admin":true}}',
      "INVALID_BODY",
      /^\/__proto__ is a forbidden property name$/,
    ),
    post(
      "constructor",
      '{"name":"Rex","categoryId":1,"constructor":{"prototype":{}}}',
      "INVALID_BODY",
      /^\/constructor is a forbidden property name$/,
    ),
    post(
      "__proto__ written with an escape",
      '{"name":"Rex","categoryId":1,"\\u005f_proto__":{}}',
      "INVALID_BODY",
      /^\/__proto__ is a forbidden property name$/,
    ),
    post(
      "__proto__ below a member whose name holds / and ~ (named by its JSON pointer, escaped)",
      '{"name":"Rex","categoryId":1,"a/b~c":{"__proto__":{}}}',
      "INVALID_BODY",
      /^\/a~1b~0c\/__proto__ is a forbidden property name$/,
    ),
    post(
      "__proto__ further down",
      '{"name":"Rex","categoryId":1,"extra":{"__proto__":{}}}',
      "INVALID_BODY",
      /^\/extra\/__proto__ is a forbidden property name$/,
    ),
    post(
      "nesting 40 deep",
      `{"name":"Rex","categoryId":1,"tags":${"[".repeat(40)}${"]".repeat(40)}}`,
      "INVALID_BODY",
      /^body nests deeper than 32 levels$/,
    ),
    // Size, counted on the wire.
    {
      name: "a Content-Length over the cap",
      path: "/pets",
      raw: `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key.key}\r\nContent-Type: application/json\r\nContent-Length: ${oversized.length}\r\n\r\n${oversized.slice(0, 100)}`,
      status: 413,
      code: "PAYLOAD_TOO_LARGE",
      says: /^the request body is over 65536 bytes$/,
    },
    {
      name: "a chunked body over the cap",
      path: "/pets",
      raw: `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${oversized.length.toString(16)}\r\n${oversized}\r\n`,
      status: 413,
      code: "PAYLOAD_TOO_LARGE",
      says: /^the request body is over 65536 bytes$/,
    },
  ];

  for (const bad of table) {
    test(`${bad.name}: ${bad.status} ${bad.code}`, async () => {
      const before = backend.requests.length;
      const answer =
        bad.raw !== undefined
          ? await sendRaw(gw.origin, bad.raw)
          : await send(`${gw.url}${bad.path}`, {
              key: key.key,
              method: bad.method ?? "GET",
              headers: bad.headers ?? {},
              ...(bad.body === undefined ? {} : { body: bad.body }),
              ...(bad.chunked ? { chunked: true } : {}),
            });
      assert.equal(answer.status, bad.status, answer.body);
      assert.match(String(answer.headers["content-type"]), /^application\/json/);
      const error = answer.json<{ code: string; message: string; status: number }>();
      assert.ok(gw.gateway.api.validateError(error), answer.body);
      assert.equal(error.code, bad.code);
      assert.equal(error.status, bad.status);
      assert.match(error.message, bad.says);
      assert.equal(backend.requests.length, before, "the backend saw it");
    });
  }

  test("the valid neighbours of those requests do reach the backend", async () => {
    const cases: (SendOptions & { path: string; expect: number })[] = [
      { path: "/pets/9223372036854775807", expect: 200 },
      { path: "/pets/-9223372036854775808", expect: 200 },
      { path: "/pets/0", expect: 200 },
      { path: "/pets?status=pending&limit=5", expect: 200 },
      {
        path: "/pets",
        method: "POST",
        headers: { "content-type": "application/json; charset=utf-8" },
        body: '{"name":"Rex","categoryId":9223372036854775807,"status":"sold"}',
        expect: 201,
      },
      {
        path: "/pets",
        method: "POST",
        headers: json,
        body: '{"name":"R\\u00e9x \\"the 1.0e3\\"","categoryId":-9223372036854775808}',
        expect: 201,
      },
      {
        path: "/pets",
        method: "POST",
        headers: json,
        body: ` {"name":"${"y".repeat(65_000)}","categoryId":0} `,
        expect: 201,
      },
    ];
    for (const { path, expect, ...options } of cases) {
      const before = backend.requests.length;
      const answer = await send(`${gw.url}${path}`, { key: key.key, ...options });
      assert.equal(answer.status, expect, `${path}: ${answer.body.slice(0, 200)}`);
      assert.equal(backend.requests.length, before + 1);
      if (options.body !== undefined) assert.equal(backend.requests.at(-1)?.body.toString(), options.body);
    }
  });
});

describe("limit on GET /pets", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  const key = newKey("pager");
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(likeAPetStore);
    gw = await gatewayFor(backend.url, { keysFile: keysFileWith("limit.json", [key]) });
  });
  after(async () => {
    await stop(gw);
    await backend.close();
  });

  const adjustments = (samples: readonly Sample[], adjustment: string) =>
    sampleValue(samples, "gateway_limit_adjustments_total", {
      operation: "listPets",
      parameter: "limit",
      adjustment,
    });

  const cases: readonly {
    readonly query: string;
    /** What the backend received, or undefined when the request is refused. */
    readonly backendUrl: string | undefined;
    readonly adjustment?: "defaulted" | "clamped_to_minimum" | "clamped_to_maximum";
    readonly code?: string;
  }[] = [
    { query: "", backendUrl: "/v1/pets?limit=20", adjustment: "defaulted" },
    { query: "?limit=0", backendUrl: "/v1/pets?limit=1", adjustment: "clamped_to_minimum" },
    { query: "?limit=-5", backendUrl: "/v1/pets?limit=1", adjustment: "clamped_to_minimum" },
    { query: "?limit=1", backendUrl: "/v1/pets?limit=1" },
    { query: "?limit=100", backendUrl: "/v1/pets?limit=100" },
    { query: "?limit=101", backendUrl: "/v1/pets?limit=100", adjustment: "clamped_to_maximum" },
    { query: "?limit=1000", backendUrl: "/v1/pets?limit=100", adjustment: "clamped_to_maximum" },
    {
      query: "?limit=99999999999999999999999",
      backendUrl: "/v1/pets?limit=100",
      adjustment: "clamped_to_maximum",
    },
    {
      query: "?status=sold&limit=0",
      backendUrl: "/v1/pets?status=sold&limit=1",
      adjustment: "clamped_to_minimum",
    },
    { query: "?status=sold", backendUrl: "/v1/pets?status=sold&limit=20", adjustment: "defaulted" },
    { query: "?limit=abc", backendUrl: undefined, code: "INVALID_PARAMETER" },
    { query: "?limit=1.5", backendUrl: undefined, code: "INVALID_PARAMETER" },
    { query: "?limit=5&limit=6", backendUrl: undefined, code: "DUPLICATE_PARAMETER" },
  ];

  for (const { query, backendUrl, adjustment, code } of cases) {
    const what =
      backendUrl === undefined
        ? `refused with ${code}`
        : `the backend receives ${backendUrl.slice(8) || "?"}`;
    test(`GET /pets${query || " (no limit)"}: ${what}${adjustment ? `, counted as ${adjustment}` : ""}`, async () => {
      const before = backend.requests.length;
      const samplesBefore = await scrape(gw);
      const requestId = nextRequestId("limit");
      const answer = await send(`${gw.url}/pets${query}`, {
        key: key.key,
        headers: { "x-request-id": requestId },
      });
      const line = await accessLine(gw, requestId);
      const samplesAfter = await scrape(gw);
      for (const kind of ["defaulted", "clamped_to_minimum", "clamped_to_maximum"]) {
        assert.equal(
          adjustments(samplesAfter, kind) - adjustments(samplesBefore, kind),
          kind === adjustment ? 1 : 0,
          kind,
        );
      }
      if (backendUrl === undefined) {
        assert.equal(answer.status, 400);
        const error = answer.json<{ code: string; message: string }>();
        assert.equal(error.code, code);
        assert.match(error.message, /limit/);
        assert.ok(gw.gateway.api.validateError(error));
        assert.equal(backend.requests.length, before);
        assert.equal(answer.headers["x-limit-applied"], undefined);
        return;
      }
      assert.equal(answer.status, 200);
      assert.equal(backend.requests.length, before + 1);
      assert.equal(backend.requests.at(-1)?.url, backendUrl);
      const applied = /limit=(\d+)/.exec(backendUrl)?.[1];
      assert.equal(answer.headers["x-limit-applied"], applied);
      assert.equal(notesOf(line).limitAdjusted, adjustment);
      const requested = /limit=([^&]*)/.exec(query)?.[1];
      assert.equal(
        notesOf(line).limitRequested,
        adjustment && requested !== undefined ? requested : undefined,
      );
    });
  }

  test("the table's 20 and 100 are the default and maximum the OpenAPI document gives limit", () => {
    const schema = gw.gateway.api.operation("listPets")?.queryParameters.get("limit")?.schema;
    assert.equal(schema?.default, 20);
    assert.equal(schema?.minimum, 1);
    assert.equal(schema?.maximum, 100);
  });

  test("another document's default and maximum are the ones applied: the policy reads them, it holds no numbers", async () => {
    const document = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8")) as {
      paths: Record<
        string,
        Record<string, { parameters?: { name: string; schema: Record<string, number> }[] }>
      >;
    };
    const limit = document.paths["/pets"]?.get?.parameters?.find((parameter) => parameter.name === "limit");
    assert.ok(limit, "the real document has GET /pets?limit");
    limit.schema.default = 7;
    limit.schema.maximum = 30;
    const openapi = join(directory, "openapi-limit-7-30.json");
    writeFileSync(openapi, JSON.stringify(document));
    const other = await gatewayFor(
      backend.url,
      { keysFile: keysFileWith("limit-other.json", [key]) },
      { openapi },
    );
    try {
      const defaulted = await send(`${other.url}/pets`, { key: key.key });
      assert.equal(defaulted.status, 200);
      assert.equal(backend.requests.at(-1)?.url, "/v1/pets?limit=7");
      assert.equal(defaulted.headers["x-limit-applied"], "7");
      const clamped = await send(`${other.url}/pets?limit=100`, { key: key.key });
      assert.equal(clamped.status, 200);
      assert.equal(backend.requests.at(-1)?.url, "/v1/pets?limit=30");
      assert.equal(clamped.headers["x-limit-applied"], "30");
    } finally {
      await stop(other);
    }
  });

  test("X-Limit-Applied is on every listPets answer that got as far as the limit, whoever wrote it", async () => {
    backend.behave(() => ({ kind: "respond", status: 503, headers: JSON_HEADERS, body: "{}" }));
    try {
      const answer = await send(`${gw.url}/pets?limit=500`, { key: key.key });
      assert.equal(answer.headers["x-limit-applied"], "100");
      const refused = await send(`${gw.url}/pets?limit=500&status=lost`, { key: key.key });
      assert.equal(refused.status, 400);
      assert.equal(refused.headers["x-limit-applied"], "100");
    } finally {
      backend.behave(likeAPetStore);
    }
  });
});

test("no key and no full digest appears in any log line, error body or /metrics output", () => {
  const logs = started.flatMap((gw) => gw.logs.raw);
  assert.ok(logs.length > 100, `only ${logs.length} log lines were captured`);
  assert.ok(errorBodies.length > 100, `only ${errorBodies.length} error bodies were captured`);
  assert.equal(metricsTexts.length, started.length);
  const outputs = { logs, "error bodies": errorBodies, "/metrics": metricsTexts };
  for (const [where, texts] of Object.entries(outputs)) {
    for (const text of texts) {
      for (const key of clearKeys) assert.ok(!text.includes(key), `a key in ${where}: ${text.slice(0, 300)}`);
      // No run of 64 hex digits at all: that covers every digest of every key file above.
      const digest = /[0-9a-f]{64}/i.exec(text);
      assert.equal(digest, null, `a digest in ${where}: ${text.slice(0, 300)}`);
      assert.doesNotMatch(text, /test_[A-Za-z0-9_-]{32}/, `something key-shaped in ${where}`);
    }
  }
  // The digests of this file's keys are what the check above must catch, if they leaked.
  assert.ok(digests.size > 10);
});

// Secret hygiene: keys turn up in every place a client (or an operator) might put them, and
// none of them, nor the digest the key file holds, comes out in a log line, an answer, /metrics
// or a span the collector receives.
// Every other hardening suite ends with the same check over everything it captured.
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { writeFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { contractAnswer } from "./fixtures/contract-answer.ts";
import { type OtlpReceiver, startOtlpReceiver } from "./fixtures/otlp-receiver.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { watchForCrashes } from "./support/crashes.ts";
import { eventually } from "./support/eventually.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { sha256, writeKeysFile, writeKeysFileAt } from "./support/keys.ts";
import { assertNoSecrets, capturedOutputs, spanTexts } from "./support/secrets.ts";
import { exportingTo } from "./support/tracing.ts";

const generated = writeKeysFile(["acme", "globex"]);
const { file: keysFile, key, keyOf } = generated;
// A random key may have no digit at all: letters only, as about 1 in 1,500 generated keys.
const LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const lettersOnly = `pgw_${Array.from({ length: 43 }, () => LETTERS[randomInt(LETTERS.length)]).join("")}`;
const keys = [...generated.keys, { consumer: "initech", key: lettersOnly }];
writeKeysFileAt(keysFile, keys);
const other = keyOf("globex");

describe("secret hygiene", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let receiver: OtlpReceiver;
  const answers: string[] = [];
  const crashes = watchForCrashes();
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    receiver = await startOtlpReceiver();
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys: generated,
      config: { policies: { auth: { reloadIntervalMs: 100 } }, log: { level: "debug" } },
      tracing: exportingTo(receiver.url),
    });
  });
  after(async () => {
    const outputsGw = await capturedOutputs(gw, answers);
    // Closing flushes the spans still queued.
    await gw.close();
    await backend.close();
    await receiver.close();
    crashes.stop();
    assert.deepEqual(crashes.crashes, []);
    assertNoSecrets(keys, outputsGw, "everything the gateway wrote");
    assert.ok(receiver.spans.length >= 20, `${receiver.spans.length} spans`);
    assert.deepEqual(receiver.failures, []);
    assertNoSecrets(keys, spanTexts(receiver), "what the collector got");
  });

  const send = async (path: string, options: Parameters<typeof request>[1] = {}) => {
    const answer = await request(`${gw.url}${path}`, options);
    // Error bodies are the gateway's own words; a 2xx body is the backend's (it echoes a name).
    answers.push(JSON.stringify(answer.headers));
    if (answer.status >= 400) answers.push(answer.body);
    return answer;
  };

  test("valid keys, on every operation, leave only the consumer's name behind", async () => {
    assert.equal((await send("/pets", { key })).status, 200);
    assert.equal((await send("/pets", { key: other, method: "HEAD" })).status, 200);
    assert.equal((await send("/pets/1", { key })).status, 200);
    const body = JSON.stringify({ name: "Rex", categoryId: 1 });
    assert.equal((await send("/pets", { key, method: "POST", body })).status, 201);
    assert.ok(gw.logs.messages("request").some((line) => line.consumer === "acme"));
  });

  test("keys that do not open the door are refused without being repeated anywhere", async () => {
    for (const authorization of [
      `Bearer ${key}x`,
      `Bearer x${key}`,
      `Bearer ${key.slice(0, -1)}`,
      `Bearer ${sha256(key)}`,
      `bearer ${key} ${other}`,
      `Basic ${Buffer.from(`acme:${key}`).toString("base64")}`,
      `Token ${key}`,
      key,
      `Bearer ${key}\t`,
    ]) {
      const answer = await send("/pets", { headers: { authorization } });
      assert.ok(
        answer.status === 401 || answer.status === 200,
        `${answer.status} for ${authorization.slice(0, 8)}`,
      );
    }
  });

  test("keys pasted where keys do not belong: query, other headers, cookies, bodies, parameter values", async () => {
    const pasted = [
      `/pets?api_key=${key}`,
      `/pets?access_token=${key}`,
      `/pets?token=${key}&limit=5`,
      `/pets?apiKey=${key}`,
    ];
    for (const path of pasted) assert.equal((await send(path, { key: other })).status, 400, path);
    // Under names that say nothing of keys, and in the path: refused as values, and not logged.
    for (const path of [
      `/pets?status=${key}`,
      `/pets?limit=5&status=${key}`,
      `/pets/${key}`,
      `/pets?status=${lettersOnly}`,
      `/pets/${lettersOnly}`,
    ]) {
      assert.equal((await send(path, { key: other })).status, 400, path);
    }
    for (const headers of [{ "x-api-key": key }, { cookie: `session=${key}` }]) {
      assert.equal((await send("/pets", { key: other, headers })).status, 200);
    }
    // As the request id, next to itself in Authorization: the gateway makes a request id of its own.
    const echoed = await send("/pets", { key, headers: { "x-request-id": key } });
    assert.equal(echoed.status, 200);
    assert.notEqual(echoed.headers["x-request-id"], key);
    // Somebody's key (or its digest) as the request id, with another key or none: never repeated,
    // and the operator sees in the access line that somebody sent one.
    for (const [options, status, id] of [
      [{ key: other }, 200, key],
      [{}, 401, key],
      [{ key: other }, 200, sha256(key)],
    ] as const) {
      const answer = await send("/pets", { ...options, headers: { "x-request-id": id } });
      assert.equal(answer.status, status);
      assert.match(String(answer.headers["x-request-id"]), /^[0-9a-f-]{36}$/);
      const line = await eventually("the access line", () =>
        gw.logs.messages("request").find((entry) => entry.reqId === answer.headers["x-request-id"]),
      );
      assert.equal(line.requestIdReplaced, "credential");
    }
    // An id built around the request's own key holds the key all the same.
    for (const id of [`${key}-retry-2`, `req.${key}`, `${key}${key}`]) {
      const answer = await send("/pets", { key, headers: { "x-request-id": id } });
      assert.equal(answer.status, 200);
      assert.match(String(answer.headers["x-request-id"]), /^[0-9a-f-]{36}$/, id.slice(0, 4));
      const line = await eventually("the access line", () =>
        gw.logs.messages("request").find((entry) => entry.reqId === answer.headers["x-request-id"]),
      );
      assert.equal(line.requestIdReplaced, "credential");
    }
    // An id that is not a known key is kept as the client sent it.
    const kept = await send("/pets", { key: other, headers: { "x-request-id": "order-4711-retry-2" } });
    assert.equal(kept.headers["x-request-id"], "order-4711-retry-2");
    for (const body of [
      JSON.stringify({ name: key, categoryId: 1 }),
      JSON.stringify({ name: "Rex", categoryId: key }),
      `{"name":"${key}`,
      `${key}`,
    ]) {
      const answer = await send("/pets", { key: other, method: "POST", body });
      assert.ok([201, 400].includes(answer.status), `${answer.status}: ${answer.body}`);
    }
  });

  test("a key in the target leaves no piece of itself in the access line: cut at the length bound, or percent-encoded", async () => {
    const encoded = [...key].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("");
    const halfEncoded = [...key]
      .map((c, i) => (i % 2 === 0 ? c : `%${c.charCodeAt(0).toString(16)}`))
      .join("");
    // What comes before the key takes 236 characters: the cut at 256 leaves 20 of it, too short
    // a run to look like a key on its own.
    const padding = "1".repeat(236 - "/v1/pets?status=".length - "&x=".length);
    const targets = [
      `/pets?status=${padding}&x=${key}`,
      `/pets?status=${padding}&api_key=${key}`,
      `/pets?status=${encoded}`,
      `/pets/${encoded}`,
      `/pets?status=${halfEncoded}`,
    ];
    for (const target of targets) {
      const answer = await send(target, { key: other });
      assert.ok(
        answer.status === 400 || answer.status === 431,
        `${answer.status} for ${target.slice(0, 20)}`,
      );
      const reqId = answer.headers["x-request-id"];
      const line = await eventually("the access line", () =>
        gw.logs.messages("request").find((entry) => entry.reqId === reqId),
      );
      const path = decodeURIComponent(
        String(line.path)
          .replace(/…$/, "")
          .replace(/%(?![0-9a-f]{2})/gi, ""),
      );
      // Any 12 characters of the key in a row would be a piece of it.
      for (let at = 0; at + 12 <= key.length; at++) {
        assert.ok(
          !path.includes(key.slice(at, at + 12)),
          `the access line holds a piece of the key: ${line.path}`,
        );
      }
    }
  });

  test("a broken key file on reload is reported without quoting the digests it holds", async () => {
    const digests = keys.map((k) => ({ consumer: k.consumer, sha256: sha256(k.key) }));
    const reloads = () => gw.logs.lines.filter((line) => String(line.msg).startsWith("api key")).length;
    const before = reloads();
    writeFileSync(keysFile, `${JSON.stringify({ keys: digests }).slice(0, -2)} oops ]}`);
    await eventually("the failed reload logged", () => reloads() > before);
    assert.equal((await send("/pets", { key })).status, 200, "the previous keys still work");
    writeFileSync(keysFile, JSON.stringify({ keys: digests }));
  });
});

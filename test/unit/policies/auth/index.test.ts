// The auth policy's request phase, in memory (test/support/policy-harness.ts): which requests get
// through to the backend, with which headers, and what the refused ones are told.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import auth from "../../../../policies/auth/index.ts";
import { sha256, writeKeysFile } from "../../../support/keys.ts";
import { OWN_DOCUMENT } from "../../../support/openapi-documents.ts";
import { policyHarness } from "../../../support/policy-harness.ts";

const { file: keysFile, key: acme } = writeKeysFile(["acme"]);
const gateway = policyHarness(auth, { keysFile });
after(() => gateway.close());

test("a request without a key gets 401 MISSING_API_KEY with a Bearer challenge, and never reaches the backend", async () => {
  const trial = await gateway.request({ path: "/v1/pets" });
  assert.equal(trial.forwarded, undefined);
  assert.equal(trial.reply?.status, 401);
  assert.equal(trial.reply?.error?.code, "MISSING_API_KEY");
  assert.equal(trial.reply?.headers["www-authenticate"], "Bearer");
  assert.equal(trial.exchange.notes.authFailure, "no header");
});

test("a credential of another scheme is a missing bearer key, not an invalid one", async () => {
  const trial = await gateway.request({ path: "/v1/pets", headers: { authorization: `Basic ${acme}` } });
  assert.equal(trial.reply?.error?.code, "MISSING_API_KEY");
  assert.equal(trial.exchange.notes.authFailure, "not bearer");
});

test("an unknown key gets 401 INVALID_API_KEY with an invalid_token challenge, the key nowhere in the answer", async () => {
  const wrong = `${acme.slice(0, -1)}${acme.endsWith("A") ? "B" : "A"}`;
  const trial = await gateway.request({ path: "/v1/pets", headers: { authorization: `Bearer ${wrong}` } });
  assert.equal(trial.reply?.status, 401);
  assert.equal(trial.reply?.error?.code, "INVALID_API_KEY");
  assert.equal(trial.reply?.headers["www-authenticate"], 'Bearer error="invalid_token"');
  assert.doesNotMatch(JSON.stringify(trial.reply), new RegExp(wrong));
  assert.equal(trial.exchange.notes.authFailure, "unknown key");
});

test("an empty bearer key is invalid", async () => {
  const trial = await gateway.request({ path: "/v1/pets", headers: { authorization: "Bearer " } });
  assert.equal(trial.reply?.status, 401);
});

test("a good key names its consumer, for the log and for the backend, and passes the client's Authorization on", async () => {
  const trial = await gateway.request({
    path: "/v1/pets",
    headers: { authorization: `Bearer ${acme}`, "x-consumer": "globex" },
  });
  assert.equal(trial.reply, undefined);
  assert.equal(trial.exchange.consumer, "acme");
  assert.equal(trial.forwarded?.headers["x-consumer"], "acme", "the client's own x-consumer is replaced");
  assert.equal(trial.forwarded?.headers.authorization, `Bearer ${acme}`);
});

test("a refusal is never cached and carries the request's id", async () => {
  const trial = await gateway.request({ path: "/v1/pets/1" });
  assert.equal(trial.reply?.status, 401);
  assert.equal(trial.reply?.headers["x-request-id"], trial.exchange.requestId);
  assert.equal(trial.reply?.headers["cache-control"], "no-store");
});

test("a key past its notAfter is refused as invalid; only the log says whose it was", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-harness-keys-"));
  const file = join(dir, "api-keys.json");
  const key = "test_expiring-key-of-initech";
  writeFileSync(
    file,
    JSON.stringify({
      keys: [{ consumer: "initech", sha256: sha256(key), notAfter: "2030-01-01T00:00:00Z" }],
    }),
  );
  let now = Date.parse("2029-12-31T23:59:59Z");
  const expiring = policyHarness(auth, { keysFile: file }, { now: () => now });
  try {
    const before = await expiring.request({ path: "/v1/pets", headers: { authorization: `Bearer ${key}` } });
    assert.equal(before.exchange.consumer, "initech");
    now = Date.parse("2030-01-01T00:00:01Z");
    const afterwards = await expiring.request({
      path: "/v1/pets",
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(afterwards.reply?.error?.code, "INVALID_API_KEY");
    assert.equal(afterwards.reply?.error?.message, "The API key is not valid");
    assert.equal(afterwards.exchange.notes.authFailure, "expired key");
    assert.equal(afterwards.exchange.notes.keyConsumer, "initech");
  } finally {
    await expiring.close();
  }
});

test("an operation the document makes public needs no key, and a client cannot name the consumer there", async () => {
  const open = policyHarness(auth, { keysFile }, { openapi: OWN_DOCUMENT });
  try {
    const trial = await open.request({ path: "/v1/pets", headers: { "x-consumer": "acme" } });
    assert.equal(trial.reply, undefined);
    assert.equal(trial.exchange.consumer, undefined);
    assert.equal(trial.forwarded?.headers["x-consumer"], undefined);
    const keyed = await open.request({ method: "GET", path: "/v1/pets/1" });
    assert.equal(keyed.reply?.status, 401, "the other operations still need a key");
  } finally {
    await open.close();
  }
});

test("upstreamAuthorization strip: the backend gets no Authorization, on keyed and public operations alike", async () => {
  const strip = policyHarness(auth, { keysFile, upstreamAuthorization: "strip" }, { openapi: OWN_DOCUMENT });
  try {
    const keyed = await strip.request({ path: "/v1/pets/1", headers: { authorization: `Bearer ${acme}` } });
    assert.equal(keyed.exchange.consumer, "acme");
    assert.equal(keyed.forwarded?.headers.authorization, undefined);
    const open = await strip.request({ path: "/v1/pets", headers: { authorization: "Bearer anything" } });
    assert.equal(open.forwarded?.headers.authorization, undefined);
  } finally {
    await strip.close();
  }
});

test("upstreamAuthorization replace: the backend gets the deployment's credential, never the client's key", async () => {
  process.env.HARNESS_UPSTREAM_TOKEN = "backend-secret";
  process.env.HARNESS_UPSTREAM_SCHEMED = "Basic YmFja2VuZDpzZWNyZXQ=";
  const replace = (variable: string) =>
    policyHarness(auth, { keysFile, upstreamAuthorization: "replace", upstreamCredentialEnv: variable });
  const bare = replace("HARNESS_UPSTREAM_TOKEN");
  const schemed = replace("HARNESS_UPSTREAM_SCHEMED");
  try {
    const trial = await bare.request({ path: "/v1/pets", headers: { authorization: `Bearer ${acme}` } });
    assert.equal(trial.forwarded?.headers.authorization, "Bearer backend-secret");
    const withScheme = await schemed.request({
      path: "/v1/pets",
      headers: { authorization: `Bearer ${acme}` },
    });
    assert.equal(withScheme.forwarded?.headers.authorization, "Basic YmFja2VuZDpzZWNyZXQ=");
    // The backend's credential is one the gateway must never echo either.
    assert.equal(bare.instance.recognizesCredential?.("backend-secret"), true);
  } finally {
    await bare.close();
    await schemed.close();
    delete process.env.HARNESS_UPSTREAM_TOKEN;
    delete process.env.HARNESS_UPSTREAM_SCHEMED;
  }
});

test("bad options stop start-up with the field's path: replace without a credential, a reserved consumer header", () => {
  assert.throws(() => policyHarness(auth, { keysFile, upstreamAuthorization: "replace" }), {
    message: /^policies\.auth\.upstreamAuthorization is replace: set policies\.auth\.upstreamCredentialEnv/,
  });
  assert.throws(() => policyHarness(auth, { keysFile, consumerHeader: "authorization" }), {
    message: "policies.auth.consumerHeader must not be authorization",
  });
  assert.throws(() => policyHarness(auth, { keysFile, reloadIntervalMs: 10 }), {
    message: "invalid config: /policies/auth/reloadIntervalMs must be >= 100",
  });
  assert.throws(() => policyHarness(auth, {}), { message: /policies\.auth\.keysFile is required/ });
});

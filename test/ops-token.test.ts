// The ops port's bearer token (opsTokenFile): the probes stay open, everything else (the
// metrics, whose labels name consumers, and the reports) needs the token; a rotated Secret takes
// effect within seconds; the token shows up in no log line and no metric.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { contractAnswer } from "./fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { eventually } from "./support/eventually.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { GET_PET } from "./support/get-pet-deprecation.ts";
import { type Answer, request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";
import { mountSecret, type SecretMount } from "./support/secret-mount.ts";
import { assertNoneOf } from "./support/secrets.ts";

const keys = writeKeysFile(["acme"]);
const newToken = () => randomBytes(32).toString("base64url");
const GUARDED = ["/", "/metrics", "/deprecations", "/contract/violations", "/no-such-endpoint"];

function assertRefused(answer: Answer, code: string, where: string): void {
  assert.equal(answer.status, 401, `${where}: ${answer.body}`);
  assert.match(answer.headers["www-authenticate"] ?? "", /^Bearer\b/, where);
  const body = answer.json<{ code: string; message: string; status: number }>();
  assert.deepEqual(Object.keys(body).sort(), ["code", "message", "status"], where);
  assert.equal(body.code, code, where);
  assert.equal(body.status, 401, where);
}

describe("with opsTokenFile set", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let secret: SecretMount;
  const first = newToken();
  const second = newToken();
  const answers: string[] = [];
  const get = async (path: string, token?: string, scheme = "Bearer") => {
    const answer = await request(`${gw.opsUrl}${path}`, {
      ...(token !== undefined && { headers: { authorization: `${scheme} ${token}` } }),
    });
    answers.push(answer.body);
    return answer;
  };
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    // As a kubelet mounts a Secret, with the trailing newline `echo` or an editor leaves.
    secret = mountSecret("token", `${first}\n`);
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { opsTokenFile: secret.file },
    });
    // A consumer's name in the metrics' labels: what the token keeps from whoever reaches the port.
    await request(`${gw.origin}${GET_PET.path.replace("{petId}", "1")}`, { key: keys.key });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("the kubelet's probes get 200 without a token", async () => {
    for (const path of ["/healthz", "/readyz"]) assert.equal((await get(path)).status, 200, path);
  });

  test("every other path, /metrics and unknown ones included, gets 401 MISSING_OPS_TOKEN and WWW-Authenticate: Bearer", async () => {
    for (const path of GUARDED) {
      const answer = await get(path);
      assertRefused(answer, "MISSING_OPS_TOKEN", path);
      assert.ok(!answer.body.includes("acme"), "a refusal names no consumer");
    }
  });

  test("a wrong token, another scheme or an empty one gets 401 INVALID_OPS_TOKEN", async () => {
    for (const [token, scheme] of [
      [second, "Bearer"],
      [first.slice(0, -1), "Bearer"],
      [`${first}x`, "Bearer"],
      [first, "Basic"],
      ["", "Bearer"],
      [`${first} ${first}`, "Bearer"],
    ] as const) {
      assertRefused(await get("/metrics", token, scheme), "INVALID_OPS_TOKEN", `${scheme} ${token.length}`);
    }
  });

  test("the token as a bearer token opens every endpoint, whatever the scheme's case", async () => {
    const metrics = await get("/metrics", first);
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, /consumer="acme"/);
    assert.equal((await get("/deprecations", first, "bearer")).status, 200);
    assert.equal((await get("/", first, "BEARER")).status, 200);
    // Past the token, an unknown path is what it always was.
    assert.equal((await get("/no-such-endpoint", first)).status, 404);
  });

  test("a rotated Secret takes effect within seconds: the new token opens, the old one no longer does", async () => {
    secret.update(`${second}\n`);
    await eventually("the new token accepted", async () => (await get("/metrics", second)).status === 200);
    assertRefused(await get("/metrics", first), "INVALID_OPS_TOKEN", "the old token");
    assert.equal(gw.logs.messages("ops token reloaded").length, 1);
  });

  test("a broken rotation (an empty file) is logged and the token in force stays", async () => {
    const current = second;
    secret.update("\n");
    await eventually(
      "the failure logged",
      () => gw.logs.messages("ops token reload failed; keeping the previous token").length > 0,
    );
    assert.equal((await get("/metrics", current)).status, 200);
    assertRefused(await get("/metrics"), "MISSING_OPS_TOKEN", "no token after a broken rotation");
    secret.update(`${current}\n`);
  });

  test("a reload (SIGHUP) reads the file at once", async () => {
    const third = newToken();
    secret.update(third);
    await gw.gateway.reload("SIGHUP");
    assert.equal((await get("/metrics", third)).status, 200);
    secret.update(second);
    await gw.gateway.reload("SIGHUP");
  });

  test("no token, nor its digest, appears in a log line, an answer or /metrics", async () => {
    const metrics = await get("/metrics", second);
    const checked = assertNoneOf(
      [first, second],
      [...gw.logs.raw, ...answers, metrics.body],
      "the ops port's output",
    );
    assert.ok(checked > 20);
  });
});

describe("with opsMetricsOpen", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  const token = newToken();
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    const dir = mkdtempSync(join(tmpdir(), "gw-ops-token-"));
    writeFileSync(join(dir, "token"), token);
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { opsTokenFile: join(dir, "token"), opsMetricsOpen: true },
    });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("/metrics is served without the token; the reports still need it", async () => {
    assert.equal((await request(`${gw.opsUrl}/metrics`)).status, 200);
    assertRefused(await request(`${gw.opsUrl}/deprecations`), "MISSING_OPS_TOKEN", "/deprecations");
    assertRefused(await request(`${gw.opsUrl}/`), "MISSING_OPS_TOKEN", "/");
    assert.equal((await request(`${gw.opsUrl}/deprecations`, { key: token })).status, 200);
  });
});

describe("a token file the gateway cannot use stops start-up with one line that never quotes it", () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-ops-token-bad-"));
  const cases: [string, string | undefined, RegExp][] = [
    ["missing", undefined, /no such file/],
    ["empty", "\n", /empty/],
    ["short", "0123456789abcde", /shorter than 16 characters/],
    ["two words", "correct-horse battery-staple-zz", /one line of letters/],
    ["a directory", "dir", /a directory, not a regular file/],
  ];
  for (const [name, text, message] of cases) {
    test(name, async () => {
      const file = text === "dir" ? dir : join(dir, name);
      if (text !== undefined && text !== "dir") writeFileSync(file, text);
      await assert.rejects(
        startGateway({ upstreamUrl: "http://127.0.0.1:9", keys: false, config: { opsTokenFile: file } }),
        (error: Error) => {
          assert.equal(error.name, "ConfigError");
          assert.match(error.message, /OPS_TOKEN_FILE \/ opsTokenFile/);
          assert.match(error.message, message);
          if (text !== undefined && text !== "dir" && text.trim().length > 0)
            assert.ok(!error.message.includes(text.trim()));
          return true;
        },
      );
    });
  }
});

// WORKERS=2: the ops port is the cluster primary's, and so is its token. The primary asks for it
// on every path but the probes, a SIGHUP to the primary reads a rotated token at once, and
// neither the primary nor a worker writes the token or its digest anywhere.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { eventually } from "../support/eventually.ts";
import { runGatewayProgram, startGatewayProgram, type TestGatewayProgram } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { assertNoneOf } from "../support/secrets.ts";

const first = randomBytes(32).toString("hex");
const second = randomBytes(32).toString("hex");
const dir = mkdtempSync(join(tmpdir(), "gw-ops-token-workers-"));
const tokenFile = join(dir, "token");

describe("WORKERS=2 with OPS_TOKEN_FILE: the primary's ops port asks for the token", () => {
  let gateway: TestGatewayProgram;
  const answers: string[] = [];
  const get = async (path: string, token?: string) => {
    const answer = await request(`${gateway.opsUrl}${path}`, token === undefined ? {} : { key: token });
    answers.push(answer.body);
    return answer;
  };
  before(async () => {
    writeFileSync(tokenFile, `${first}\n`);
    // The demo, with the key it makes itself.
    gateway = await startGatewayProgram({ keys: false, env: { WORKERS: "2", OPS_TOKEN_FILE: tokenFile } });
    await eventually(
      "both workers listening",
      () => gateway.lines.filter((line) => line.msg === "worker listening").length >= 2,
      20_000,
    );
  });
  after(async () => {
    await gateway.stop("SIGKILL");
  });

  test("the probes answer without it; /metrics, the reports and / get 401 without it and 200 with it", async () => {
    for (const path of ["/healthz", "/readyz"]) assert.equal((await get(path)).status, 200, path);
    for (const path of ["/metrics", "/deprecations", "/"]) {
      const refused = await get(path);
      assert.equal(refused.status, 401, path);
      assert.equal(refused.headers["www-authenticate"], "Bearer");
      assert.equal(refused.json<{ code: string }>().code, "MISSING_OPS_TOKEN");
      assert.equal((await get(path, second)).status, 401, `${path} with a wrong token`);
      assert.equal((await get(path, first)).status, 200, `${path} with the token`);
    }
    // The group's figures, behind the token: both workers answer the primary's scrape.
    assert.match((await get("/metrics", first)).body, /^gateway_workers 2$/m);
  });

  test("a SIGHUP to the primary reads a rotated token at once", async () => {
    writeFileSync(tokenFile, `${second}\n`);
    gateway.child.kill("SIGHUP");
    await gateway.waitFor((line) => line.msg === "ops token reloaded" && line.why === "SIGHUP");
    assert.equal((await get("/metrics", second)).status, 200);
    assert.equal((await get("/metrics", first)).status, 401);
    // Each worker reloads its keys on the primary's word, and reads no token itself.
    const readers = gateway.lines.filter((line) => line.msg === "ops token reloaded").map((line) => line.pid);
    assert.deepEqual(new Set(readers), new Set([gateway.child.pid]));
  });

  test("no process of the group writes the token or its digest", async () => {
    const metrics = await get("/metrics", second);
    assertNoneOf(
      [first, second],
      [...gateway.raw, gateway.stderr(), ...answers, metrics.body],
      "the group's output",
    );
  });
});

test("WORKERS=2 with a token file the primary cannot read stops before any worker starts, in one line", async () => {
  const run = await runGatewayProgram({
    keys: false,
    env: { WORKERS: "2", OPS_TOKEN_FILE: join(dir, "absent") },
  });
  assert.equal(run.code, 1);
  assert.match(
    run.stderr,
    /^petstore-gateway: ops token file .*absent \(OPS_TOKEN_FILE \/ opsTokenFile\): no such file\n$/,
  );
  assert.doesNotMatch(run.stdout, /worker listening/);
});

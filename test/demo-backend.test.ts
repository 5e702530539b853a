import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { eventually } from "./support/eventually.ts";

const AUTH = { Authorization: "Bearer demo-key" };

// Starts the CLI as a real child process and waits for its single "listening" line.
async function startCli(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["src/demo-backend-cli.ts", "--port", "0"], {
    cwd: new URL("..", import.meta.url),
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const exited = once(child, "exit").then(([code]) => {
    throw new Error(`demo backend exited early with code ${code}`);
  });
  const listening = (async () => {
    for await (const line of lines) return JSON.parse(line) as { event: string; url: string };
    throw new Error("demo backend closed stdout without a listening line");
  })();
  const first = await Promise.race([listening, exited]);
  exited.catch(() => {}); // it will "exit early" when we stop it at the end
  assert.equal(first.event, "listening");
  assert.match(first.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  return { child, url: first.url };
}

describe("demo backend (CLI process over HTTP)", () => {
  let child: ChildProcess;
  let url: string;
  before(async () => ({ child, url } = await startCli()));
  after(async () => {
    const exit = once(child, "exit");
    child.kill("SIGTERM");
    const [code, signal] = await exit;
    assert.equal(code, 0, `exit code ${code} signal ${signal}`);
  });

  test("lists with the default limit, in ascending id order", async () => {
    const res = await fetch(`${url}/pets`, { headers: AUTH });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json");
    const text = await res.text();
    assert.equal(res.headers.get("content-length"), String(Buffer.byteLength(text)));
    const pets = JSON.parse(text) as Array<{ id: number; name: string; categoryId: number; status: string }>;
    assert.equal(pets.length, 6); // the default seed, fewer than the default limit of 20
    assert.deepEqual(
      pets.map((p) => p.id),
      [1, 2, 3, 4, 5, 6],
    );
    for (const p of pets) assert.deepEqual(Object.keys(p).sort(), ["categoryId", "id", "name", "status"]);
  });

  test("limit and status filter", async () => {
    const two = (await (await fetch(`${url}/pets?limit=2`, { headers: AUTH })).json()) as Array<{
      id: number;
    }>;
    assert.deepEqual(
      two.map((p) => p.id),
      [1, 2],
    );
    const sold = (await (await fetch(`${url}/pets?status=sold`, { headers: AUTH })).json()) as Array<{
      status: string;
    }>;
    assert.ok(sold.length > 0);
    assert.ok(sold.every((p) => p.status === "sold"));
    for (const bad of ["limit=0", "limit=101", "limit=2.5", "limit=abc", "status=lost"]) {
      const res = await fetch(`${url}/pets?${bad}`, { headers: AUTH });
      assert.equal(res.status, 400, bad);
      assert.equal(((await res.json()) as { status: number }).status, 400);
    }
  });

  test("create gives 201 with Location, then get gives it back", async () => {
    const res = await fetch(`${url}/pets`, {
      method: "POST",
      headers: { ...AUTH, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "Tom", categoryId: 7 }),
    });
    assert.equal(res.status, 201);
    const created = (await res.json()) as { id: number; name: string; categoryId: number; status: string };
    assert.deepEqual(created, { id: created.id, name: "Tom", categoryId: 7, status: "available" });
    assert.equal(res.headers.get("location"), `/v1/pets/${created.id}`);
    const got = await fetch(`${url}/pets/${created.id}`, { headers: AUTH });
    assert.equal(got.status, 200);
    assert.deepEqual(await got.json(), created);
    const head = await fetch(`${url}/pets/${created.id}`, { method: "HEAD", headers: AUTH });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
  });

  test("invalid bodies give 400", async () => {
    for (const body of [
      "{",
      "[]",
      '{"name":"x"}',
      '{"categoryId":1}',
      '{"name":"x","categoryId":"1"}',
      '{"name":"x","categoryId":1,"status":"lost"}',
    ]) {
      const res = await fetch(`${url}/pets`, { method: "POST", headers: AUTH, body });
      assert.equal(res.status, 400, body);
    }
  });

  test("unknown id gives 404, unknown path 404, wrong method 405", async () => {
    const res = await fetch(`${url}/pets/999999`, { headers: AUTH });
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { code: string }).code, "NOT_FOUND");
    assert.equal((await fetch(`${url}/nope`, { headers: AUTH })).status, 404);
    assert.equal((await fetch(`${url}/pets`, { method: "DELETE", headers: AUTH })).status, 405);
  });

  test("missing key gives 401", async () => {
    const res = await fetch(`${url}/pets`);
    assert.equal(res.status, 401);
    assert.deepEqual(Object.keys((await res.json()) as object).sort(), ["code", "message", "status"]);
    assert.equal((await fetch(`${url}/pets`, { headers: { Authorization: "Bearer " } })).status, 401);
  });

  test("int64 categoryId round-trips byte-exact", async () => {
    const res = await fetch(`${url}/pets`, {
      method: "POST",
      headers: { ...AUTH, "Content-Type": "application/json" },
      body: '{"name":"Rex","categoryId":1234567890123456789}',
    });
    assert.equal(res.status, 201);
    const created = await res.text();
    assert.match(created, /"categoryId":1234567890123456789[,}]/);
    const id = /"id":(\d+)/.exec(created)?.[1];
    const got = await (await fetch(`${url}/pets/${id}`, { headers: AUTH })).text();
    assert.equal(got, created);
  });
});

describe("programmable backend", () => {
  let backend: ProgrammableBackend;
  before(async () => (backend = await startProgrammableBackend()));
  after(() => backend.close());

  test("default answer and request recording", async () => {
    const res = await fetch(`${backend.url}/pets`, { method: "POST", body: "hello" });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.equal(await res.text(), "[]");
    const last = backend.requests.at(-1);
    assert.equal(last?.method, "POST");
    assert.equal(last?.url, "/v1/pets");
    assert.equal(last?.body.toString(), "hello");
  });

  test("respond with gzip", async () => {
    backend.behave(() => ({
      kind: "respond",
      status: 503,
      headers: { "Content-Type": "application/json" },
      body: '{"a":1}',
      gzip: true,
    }));
    const res = await fetch(`${backend.url}/x`);
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("content-encoding"), "gzip");
    assert.equal(await res.text(), '{"a":1}'); // fetch decompresses
  });

  test("reset-before-headers", async () => {
    backend.behave(() => ({ kind: "reset-before-headers" }));
    await assert.rejects(fetch(`${backend.url}/x`));
  });

  test("hang", async () => {
    backend.behave(() => ({ kind: "hang" }));
    await assert.rejects(fetch(`${backend.url}/x`, { signal: AbortSignal.timeout(200) }), {
      name: "TimeoutError",
    });
  });

  test("reset-mid-body", async () => {
    backend.behave(() => ({ kind: "reset-mid-body", bodyPrefix: '[{"id":1', declaredLength: 100 }));
    const res = await fetch(`${backend.url}/x`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-length"), "100");
    await assert.rejects(res.text());
  });

  test("slow-body", async () => {
    backend.behave(() => ({ kind: "slow-body", status: 200, chunks: ["[", "1,", "2]"], delayMs: 50 }));
    const started = performance.now();
    const res = await fetch(`${backend.url}/x`);
    assert.equal(await res.text(), "[1,2]");
    assert.ok(performance.now() - started >= 90);
  });

  test("close() ends even with a hung request open", async () => {
    const other = await startProgrammableBackend();
    other.behave(() => ({ kind: "hang" }));
    const pending = fetch(`${other.url}/x`);
    await eventually("the request at the backend", () => other.requests.length > 0);
    await other.close();
    await assert.rejects(pending);
  });
});

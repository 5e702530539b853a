// Every answer the gateway writes itself (src/replies.ts) carries X-Content-Type-Options: nosniff
// and Cache-Control: no-store: each ops endpoint in each of its formats, and each refusal of
// either port, those Node's parser makes included. A browser never sniffs one into a page, and
// no cache keeps a report that names consumers or a refusal that held a moment ago.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import policies from "../policies/index.ts";
import { definePolicy } from "../src/policy.ts";
import { contractAnswer } from "./fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { writeKeysFile } from "./support/keys.ts";
import { type RawResponse, rawExchange } from "./support/raw-socket.ts";

const keys = writeKeysFile(["acme"]);
const TOKEN = "own-answers-token-0123456789abcdef";
const tokenDir = mkdtempSync(join(tmpdir(), "gw-own-answers-"));
writeFileSync(join(tokenDir, "token"), TOKEN);

// A report whose collector throws: the ops port's 500.
const faultyOps = definePolicy({
  name: "faultyOps",
  optionsSchema: { type: "object", additionalProperties: false, default: {} },
  opsReports: { "/broken": { merge: (parts) => parts[0], render: (_report, _query, res) => res.end("{}") } },
  create: () => ({
    forOperation: () => undefined,
    collectReports: {
      "/broken": () => {
        throw new Error("a bug in a policy's ops code");
      },
    },
  }),
});

function assertOwnAnswer(answer: RawResponse | undefined, where: string): RawResponse {
  assert.ok(answer, `${where}: an answer`);
  assert.equal(answer.headers["x-content-type-options"], "nosniff", `${where} (${answer.status})`);
  assert.equal(answer.headers["cache-control"], "no-store", `${where} (${answer.status})`);
  return answer;
}

describe("every answer the gateway writes itself is never sniffed and never stored", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  const ops = () => Number(new URL(gw.opsUrl).port);
  const pub = () => Number(new URL(gw.origin).port);
  const send = async (port: number, head: string) =>
    (await rawExchange(port, `${head}\r\nHost: x\r\nConnection: close\r\n\r\n`)).responses[0];
  const withToken = `\r\nAuthorization: Bearer ${TOKEN}`;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    gw = await startGateway({
      upstreamUrl: backend.url,
      policies: [...policies, faultyOps],
      keys,
      config: { opsTokenFile: join(tokenDir, "token") },
    });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("each endpoint the ops port lists, in each format, for GET and HEAD", async () => {
    const listing = assertOwnAnswer(await send(ops(), `GET / HTTP/1.1${withToken}`), "GET /");
    const { endpoints } = JSON.parse(listing.body) as { endpoints: string[] };
    assert.ok(endpoints.includes("/metrics") && endpoints.includes("/deprecations"), listing.body);
    const targets = [
      ...endpoints.filter((path) => path !== "/broken"),
      "/deprecations?format=csv",
      "/deprecations?format=html",
      "/deprecations?format=json&limit=1",
      "/contract/violations?operation=listPets",
    ];
    for (const target of targets) {
      for (const method of ["GET", "HEAD"]) {
        const answer = assertOwnAnswer(
          await send(ops(), `${method} ${target} HTTP/1.1${withToken}`),
          `${method} ${target}`,
        );
        assert.ok(answer.status < 400, `${method} ${target}: ${answer.status}`);
      }
    }
  });

  test("each refusal of the ops port: the token's, the routes', the query's, a report's, a failure's, the parser's", async () => {
    const refusals: [string, number][] = [
      ["GET /metrics HTTP/1.1", 401],
      ["GET /metrics HTTP/1.1\r\nAuthorization: Bearer not-the-token", 401],
      [`GET /nothing-here HTTP/1.1${withToken}`, 404],
      [`POST /metrics HTTP/1.1${withToken}\r\nContent-Length: 0`, 405],
      [`GET /deprecations?format=csv&format=csv HTTP/1.1${withToken}`, 400],
      [`GET /deprecations?limit=0 HTTP/1.1${withToken}`, 400],
      [`GET /deprecations?after=nonsense HTTP/1.1${withToken}`, 400],
      [`GET /contract/violations?operation=nope HTTP/1.1${withToken}`, 404],
      [`GET //metrics HTTP/1.1${withToken}`, 400],
      [`GET /broken HTTP/1.1${withToken}`, 500],
      ["GET /healthz HTTP/1.1\r\nX-Big: " + "a".repeat(20_000), 431],
      ["GET /healthz HTTP/1.1\r\nBad Header: x", 400],
    ];
    for (const [head, status] of refusals) {
      const answer = assertOwnAnswer(await send(ops(), head), JSON.stringify(head.slice(0, 60)));
      assert.equal(answer.status, status, head.slice(0, 60));
    }
  });

  test("each kind of refusal of the public port: the pipeline's and the parser's", async () => {
    const refusals: [string, number][] = [
      ["GET /v1/pets HTTP/1.1", 401],
      ["GET /v1/nothing-here HTTP/1.1", 404],
      ["GET /v1/pets HTTP/1.1\r\nX-Big: " + "a".repeat(20_000), 431],
      ["GET /v1/pets HTTP/1.1\r\nBad Header: x", 400],
      ["BREW /v1/pets HTTP/1.1", 501],
    ];
    for (const [head, status] of refusals) {
      const answer = assertOwnAnswer(await send(pub(), head), JSON.stringify(head.slice(0, 60)));
      assert.equal(answer.status, status, head.slice(0, 60));
    }
  });
});

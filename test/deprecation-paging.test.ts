// /deprecations as JSON and CSV is paged: every caller is on exactly one page, the next page is
// named in the answer and in a Link header, and a page size or cursor that is not one gets 400.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { DeprecationReport } from "../policies/lifecycle/deprecation-report.ts";
import { contractAnswer } from "./fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";

const CONSUMERS = ["acme", "globex", "initech", "umbrella", "wayne"];
const keys = writeKeysFile(CONSUMERS);
const { keyOf } = keys;
type Page = DeprecationReport & { next?: string };

describe("the deprecation report, paged", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      now: () => Date.parse("2030-11-01T00:00:00Z"),
    });
    for (const consumer of CONSUMERS) {
      assert.equal((await request(`${gw.url}/pets/1`, { key: keyOf(consumer) })).status, 200);
    }
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("?limit=2 pages through every caller once, the next page named in the body and in Link", async () => {
    const seen: string[] = [];
    let target = "/deprecations?limit=2";
    for (let pages = 0; pages < CONSUMERS.length; pages++) {
      const answer = await request(`${gw.opsUrl}${target}`);
      assert.equal(answer.status, 200);
      const page = answer.json<Page>();
      const section = page.operations.find((operation) => operation.operation === "getPet");
      assert.equal(section?.calls, CONSUMERS.length, "every page has the operation's figures");
      assert.ok((section?.callers.length ?? 0) <= 2);
      seen.push(...(section?.callers ?? []).map((row) => row.consumer));
      if (page.next === undefined) {
        assert.equal(answer.headers.link, undefined);
        break;
      }
      assert.equal(answer.headers.link, `<?limit=2&after=${page.next}>; rel="next"`);
      target = `/deprecations?limit=2&after=${page.next}`;
    }
    assert.deepEqual(seen.sort(), CONSUMERS);
  });

  test("the CSV pages alike, its next page in the Link header", async () => {
    const first = await request(`${gw.opsUrl}/deprecations?format=csv&limit=3`);
    assert.equal(first.body.trim().split("\r\n").length, 1 + 3);
    const next = /^<\?(format=csv&limit=3&after=[\w-]+)>; rel="next"$/.exec(String(first.headers.link))?.[1];
    assert.ok(next, String(first.headers.link));
    const second = await request(`${gw.opsUrl}/deprecations?${next}`);
    assert.equal(second.body.trim().split("\r\n").length, 1 + 2);
    assert.equal(second.headers.link, undefined);
  });

  test("without ?limit a report of one page is whole, and names no next page", async () => {
    const page = (await request(`${gw.opsUrl}/deprecations`)).json<Page>();
    assert.equal(page.next, undefined);
    assert.equal(page.operations.find((operation) => operation.operation === "getPet")?.callers.length, 5);
  });

  test("a limit or a cursor that is not one gets 400 with the Error object", async () => {
    for (const query of [
      "limit=0",
      "limit=1001",
      "limit=x",
      "limit=-1",
      "after=nope",
      "after=WyJ4IiwieSJd",
    ]) {
      const answer = await request(`${gw.opsUrl}/deprecations?${query}`);
      assert.equal(answer.status, 400, query);
      const error = answer.json<{ code: string }>();
      assert.equal(error.code, "BAD_REQUEST");
      assert.ok(gw.gateway.api.validateError(error), answer.body);
    }
  });
});

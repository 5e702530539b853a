// An error message names what the client got wrong: a parameter's name, a member of its body.
// A client that pasted its key in such a place must not find it in the answer, where a proxy,
// a browser's history or a bug report would keep it.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { contractAnswer } from "./fixtures/contract-answer.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";

const keys = writeKeysFile(["acme"]);
const { key } = keys;

let backend: ProgrammableBackend;
let gw: TestGateway;
before(async () => {
  backend = await startProgrammableBackend();
  backend.behave(contractAnswer);
  gw = await startGateway({ upstreamUrl: backend.url, keys });
});
after(async () => {
  await gw.close();
  await backend.close();
});

/** The first 12-character piece of the key the text holds, if any. */
function pieceOfKey(text: string): string | undefined {
  for (let i = 0; i + 12 <= key.length; i++) {
    const piece = key.slice(i, i + 12);
    if (text.includes(piece)) return piece;
  }
  return undefined;
}

async function assertRefusedWithoutKey(path: string, body?: string): Promise<void> {
  const answer = await request(
    `${gw.url}${path}`,
    body === undefined ? { key } : { key, method: "POST", body },
  );
  assert.ok(answer.status >= 400 && answer.status < 500, `${answer.status} ${answer.body}`);
  const piece = pieceOfKey(answer.body);
  assert.equal(piece, undefined, `the answer holds "${piece}" of the key: ${answer.body}`);
}

test("a key sent as a query parameter's name or value is not echoed in the error", async () => {
  await assertRefusedWithoutKey(`/pets?${key}=1`);
  await assertRefusedWithoutKey(`/pets?${key}=1&${key}=2`);
  await assertRefusedWithoutKey(`/pets?status=sold&x${key}y`);
  await assertRefusedWithoutKey(`/pets?status=${key}`);
  await assertRefusedWithoutKey(`/pets?limit=${key}`);
  await assertRefusedWithoutKey(`/pets/${key}`);
});

test("a key sent as a JSON member's name or value is not echoed in the error", async () => {
  await assertRefusedWithoutKey("/pets", JSON.stringify({ name: "Rex", categoryId: 1, [key]: 1 }));
  await assertRefusedWithoutKey("/pets", `{"name":"Rex","categoryId":1,"${key}":1,"${key}":2}`);
  await assertRefusedWithoutKey("/pets", `{"name":"Rex","${key}":}`);
  await assertRefusedWithoutKey("/pets", `{"name":"Rex","categoryId":1,"${key}":1.0}`);
  await assertRefusedWithoutKey("/pets", JSON.stringify({ name: "Rex", categoryId: key }));
  await assertRefusedWithoutKey("/pets", JSON.stringify({ name: "Rex", categoryId: 1, status: key }));
  await assertRefusedWithoutKey("/pets", JSON.stringify({ name: key, categoryId: "1" }));
});

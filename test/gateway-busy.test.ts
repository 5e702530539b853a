// The process holds at most server.maxBufferedBytes of answers for clients that have not read
// them; past it, a request whose answer would be held is answered 503 GATEWAY_BUSY before it
// reaches the backend, and served again once the room comes back.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { PET } from "./fixtures/contract-answer.ts";
import {
  jsonAnswer,
  type ProgrammableBackend,
  startProgrammableBackend,
} from "./fixtures/programmable-backend.ts";
import { eventually } from "./support/eventually.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";

const HELD = 40_000;
// A page of exactly HELD bytes that keeps the contract.
const pet = (id: number) => ({ ...PET, id });
const base = JSON.stringify(Array.from({ length: 400 }, (_, id) => pet(id)));
const PAGE = `${base.slice(0, -1)}${" ".repeat(HELD - base.length)}]`;

const keys = writeKeysFile(["acme"]);
const { key } = keys;

describe("a gateway holding all the answers it may", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave((req) => (req.headers["x-hang"] ? { kind: "hang" } : jsonAnswer(200, PAGE)));
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: { server: { maxBufferedBytes: HELD } },
    });
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("answers 503 GATEWAY_BUSY with Retry-After before forwarding, then serves once room is back", async () => {
    assert.equal(PAGE.length, HELD);
    // A client pipelines two requests and reads nothing: the first hangs at the backend, so the
    // second's answer is held behind it, filling the process's room.
    const hog = net.connect(Number(new URL(gw.origin).port), "127.0.0.1");
    hog.on("error", () => {});
    hog.pause();
    const ask = (extra: string) =>
      `GET /v1/pets HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n${extra}\r\n`;
    hog.write(ask("X-Hang: 1\r\n") + ask(""));
    await eventually("both of the hog's requests at the backend", () => backend.requests.length >= 2);
    const asked = () => backend.requests.length;
    await eventually(
      "the held answer filling the room",
      async () => (await request(`${gw.url}/pets`, { key })).status === 503,
    );
    const before = asked();
    const busy = await request(`${gw.url}/pets`, { key });
    assert.equal(busy.status, 503);
    assert.equal(busy.headers["retry-after"], "1");
    assert.deepEqual(busy.json(), {
      code: "GATEWAY_BUSY",
      message: "The gateway holds as many answers as it may; try again shortly",
      status: 503,
    });
    assert.equal(asked(), before, "the refused request never reached the backend");
    const line = gw.logs.messages("request").findLast((l) => l.status === 503);
    assert.equal(line?.code, "GATEWAY_BUSY");
    assert.equal(line?.reason, "internal");

    // The hog leaves: its held answer is released with its connection.
    hog.destroy();
    await eventually(
      "served again once the hog is gone",
      async () => (await request(`${gw.url}/pets`, { key })).status === 200,
    );
  });
});

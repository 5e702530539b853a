// The benchmark's backend: the demo backend's own answers, captured once at start-up and then
// served as fixed bytes (the list pages in 64 distinct versions, in turn). The demo backend builds each page anew (BigInt ids, a JSON walk); a
// static one keeps the backend's share small and equal for every target, so that the numbers
// show what sits between the client and the backend.
//   node scripts/bench/static-backend.ts [--seed 150]
// Prints one JSON line {event:"listening", url} on stdout, like the demo backend CLI.
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { createDemoBackend } from "../../src/demo-backend.ts";

interface Captured {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

const { values } = parseArgs({ options: { seed: { type: "string", default: "150" } } });
const seed = Number(values.seed);
if (!Number.isInteger(seed) || seed < 100) throw new Error("--seed must be an integer of at least 100");

async function capture(origin: string, method: string, path: string, body?: string): Promise<Captured> {
  const response = await fetch(`${origin}${path}`, {
    method,
    headers: { authorization: "Bearer bench", ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body } : {}),
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  const headers: Record<string, string> = { "content-type": "application/json" };
  const location = response.headers.get("location");
  if (location) headers.location = location;
  return { status: response.status, headers, body: bytes };
}

const demo = createDemoBackend({ seed });
demo.listen(0, "127.0.0.1");
await once(demo, "listening");
const demoOrigin = `http://127.0.0.1:${(demo.address() as AddressInfo).port}`;
const page20 = await capture(demoOrigin, "GET", "/v1/pets");
const page100 = await capture(demoOrigin, "GET", "/v1/pets?limit=100");
// Every animal of the demo backend, read through its status filter (a page holds at most 100).
const animals = new Map<number, unknown>();
for (const status of ["available", "pending", "sold"]) {
  const { body } = await capture(demoOrigin, "GET", `/v1/pets?limit=100&status=${status}`);
  for (const pet of JSON.parse(body.toString()) as { id: number }[]) animals.set(pet.id, pet);
}
const single = await capture(demoOrigin, "GET", "/v1/pets/1");
const created = await capture(
  demoOrigin,
  "POST",
  "/v1/pets",
  JSON.stringify({ name: "Rex", categoryId: 1, status: "available" }),
);
demo.close();
demo.closeAllConnections();
const notFound: Captured = {
  status: 404,
  headers: { "content-type": "application/json" },
  body: Buffer.from('{"code":"NOT_FOUND","message":"no route","status":404}'),
};

/**
 * PAGES distinct pages of each size, served in turn: window k of the animals taken from the k-th
 * on (wrapping round), so that no target can pass the benchmark by caching an answer's content.
 */
const PAGES = 64;
const everyAnimal = [...animals.values()];
if (everyAnimal.length < Math.max(100, PAGES))
  throw new Error(`only ${everyAnimal.length} animals: raise --seed`);
const rotated = (template: Captured, size: number): Captured[] =>
  Array.from({ length: PAGES }, (_, k) => ({
    ...template,
    body: Buffer.from(JSON.stringify([...everyAnimal.slice(k), ...everyAnimal.slice(0, k)].slice(0, size))),
  }));
const pages20 = rotated(page20, 20);
const pages100 = rotated(page100, 100);
let turn = 0;

function send(res: http.ServerResponse, answer: Captured): void {
  res.writeHead(answer.status, { ...answer.headers, "content-length": answer.body.length });
  res.end(answer.body);
}

function route(method: string, url: string): Captured {
  const q = url.indexOf("?");
  const path = q === -1 ? url : url.slice(0, q);
  if (path === "/v1/pets") {
    if (method === "POST") return created;
    // The gateway forwards the defaulted limit explicitly (?limit=20); both mean the 20-page.
    turn = (turn + 1) % PAGES;
    return /(?:^|&)limit=100(?:&|$)/.test(q === -1 ? "" : url.slice(q + 1))
      ? (pages100[turn] as Captured)
      : (pages20[turn] as Captured);
  }
  if (path.startsWith("/v1/pets/")) return single;
  return notFound;
}

const server = http.createServer({ keepAliveTimeout: 75_000 }, (req, res) => {
  const answer = route(req.method ?? "GET", req.url ?? "/");
  if (req.method === "POST") {
    // Read the body to its end like a real backend before answering.
    req.resume();
    req.once("end", () => send(res, answer));
    return;
  }
  send(res, answer);
});
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ event: "listening", url: `http://127.0.0.1:${port}/v1` })}\n`);
});
process.once("SIGTERM", () => process.exit(0));
process.once("SIGINT", () => process.exit(0));

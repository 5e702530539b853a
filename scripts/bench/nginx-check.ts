// The least check an nginx `auth_request` could ask, for the `nginx-check` bench target: the
// reference decision mode is measured against (issue 31). It speaks the gateway's nginx door
// (src/decision/doors.ts) so that nginx runs the very config `npm run proxy-config -- nginx`
// generates, and does only what every request of the bench needs:
// - the key's SHA-256 looked up among the key file's digests (401, carried as the door carries it);
// - listPets' `limit` defaulted and clamped to the document's bounds, into the upstream URI;
// - getPet's Deprecation, Sunset and Link headers, from the document's x-gateway-deprecation.
// No routing beyond those two paths, no validation, no metric, no log line: what a team would
// write by hand before it had a gateway.
//
//   node scripts/bench/nginx-check.ts --keys-file keys.json [--openapi config/openapi.json]
// Prints {"event":"listening","url":...} on stdout once it listens, like the bench's other parties.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { "keys-file": { type: "string" }, openapi: { type: "string" } },
});
if (values["keys-file"] === undefined) {
  process.stderr.write("usage: nginx-check.ts --keys-file FILE [--openapi FILE]\n");
  process.exit(2);
}
const keys = new Map<string, string>(
  (
    JSON.parse(readFileSync(values["keys-file"], "utf8")) as {
      keys: { consumer: string; sha256: string }[];
    }
  ).keys.map(({ consumer, sha256 }) => [sha256, consumer]),
);

interface Parameter {
  readonly name: string;
  readonly schema?: { minimum?: number; maximum?: number; default?: number };
}
const document = JSON.parse(
  readFileSync(values.openapi ?? join(import.meta.dirname, "../../config/openapi.json"), "utf8"),
);
const basePath = new URL(document.servers?.[0]?.url ?? "/", "http://x").pathname.replace(/\/$/, "");
const limit = (document.paths["/pets"].get.parameters as Parameter[]).find((p) => p.name === "limit")
  ?.schema as { minimum: number; maximum: number; default: number };
const deprecation = document.paths["/pets/{petId}"].get["x-gateway-deprecation"] as {
  since: string;
  sunset: string;
  successor: { path: string };
};
const DEPRECATED = {
  deprecation: `@${Math.floor(Date.parse(deprecation.since) / 1000)}`,
  sunset: new Date(deprecation.sunset).toUTCString(),
  link: `<${basePath}${deprecation.successor.path}>; rel="successor-version"`,
};
const PETS = `${basePath}/pets`;
const PET = `${PETS}/`;

/** A refusal as the nginx door says it: 403 carrying the answer for the render call (carried-answer.ts). */
const REFUSED_401 = Buffer.from(
  JSON.stringify({
    status: 401,
    headers: { "content-type": "application/json", "www-authenticate": 'Bearer error="invalid_token"' },
    body: '{"code":"INVALID_API_KEY","message":"The API key is not valid","status":401}',
  }),
).toString("base64");

const server = http.createServer((req, res) => {
  if (req.url === "/decide/nginx/deny") {
    const carried = JSON.parse(Buffer.from(String(req.headers["x-gateway-deny"]), "base64").toString());
    res.writeHead(carried.status, { ...carried.headers, "content-length": Buffer.byteLength(carried.body) });
    res.end(carried.body);
    return;
  }
  const authorization = req.headers.authorization ?? "";
  const key = authorization.startsWith("Bearer ") ? authorization.slice(7) : "";
  const consumer = keys.get(createHash("sha256").update(key).digest("hex"));
  if (consumer === undefined) {
    res.writeHead(403, { "x-gateway-deny": REFUSED_401, "content-length": 0 });
    res.end();
    return;
  }
  const uri = String(req.headers["x-original-uri"] ?? "");
  const query = uri.indexOf("?");
  const path = query === -1 ? uri : uri.slice(0, query);
  const headers: http.OutgoingHttpHeaders = {
    "x-gateway-upstream-x-consumer": consumer,
    "x-gateway-upstream-authorization": authorization,
    "content-length": 0,
  };
  let target = uri.slice(basePath.length);
  if (path === PETS) {
    const params = new URLSearchParams(query === -1 ? "" : uri.slice(query + 1));
    const given = params.get("limit");
    const asked = given === null || !Number.isInteger(Number(given)) ? limit.default : Number(given);
    const applied = String(Math.min(limit.maximum, Math.max(limit.minimum, asked)));
    params.set("limit", applied);
    target = `${path.slice(basePath.length)}?${params}`;
    headers["x-limit-applied"] = applied;
  } else if (path.startsWith(PET)) {
    Object.assign(headers, DEPRECATED);
  }
  headers["x-gateway-upstream-uri"] = target;
  res.writeHead(200, headers);
  res.end();
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ event: "listening", url: `http://127.0.0.1:${port}` })}\n`);
});

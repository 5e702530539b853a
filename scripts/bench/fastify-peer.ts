// The peer: the gateway a skilled Node team would write by hand for this benchmark, with fastify
// and @fastify/reply-from (undici), doing the must-do work and nothing else: the key's SHA-256
// looked up among the key file's digests (401 without a known key), listPets' `limit` given the
// document's default and clamped to its bounds, the answer held whole, JSON.parse and the
// operation's compiled ajv validator (502 on a broken answer), the deprecated operation's
// Deprecation / Sunset / Link headers, one prom-client histogram observation and one pino access
// line (pino's asynchronous destination, to /dev/null). Nothing is cached on an answer's content
// or a presented key.
//   node scripts/bench/fastify-peer.ts --target http://127.0.0.1:PORT --keys-file FILE
// Prints one JSON line {event:"listening", url} on stdout.
import { hash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { parseArgs } from "node:util";
import replyFrom from "@fastify/reply-from";
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import pino from "pino";
import { Histogram, Registry } from "prom-client";
import { loadApiDescription } from "../../src/openapi.ts";
import { answerValidator, DEADLINE_MS } from "./must-do-parts.ts";

const { values } = parseArgs({
  options: { target: { type: "string" }, "keys-file": { type: "string" } },
});
if (!values.target || !values["keys-file"]) throw new Error("--target and --keys-file are required");

const root = resolve(import.meta.dirname, "../..");
const document = JSON.parse(readFileSync(join(root, "config/openapi.json"), "utf8"));
const api = loadApiDescription(join(root, "config/openapi.json"));
const validators = {
  listPets: answerValidator(api, "listPets", "200"),
  getPet: answerValidator(api, "getPet", "200"),
  createPet: answerValidator(api, "createPet", "201"),
};
const limit = api.operation("listPets")?.queryParameters.get("limit")?.schema as {
  default: number;
  minimum: number;
  maximum: number;
};
const consumers = new Map<string, string>(
  (
    JSON.parse(readFileSync(values["keys-file"], "utf8")) as { keys: { consumer: string; sha256: string }[] }
  ).keys.map((entry) => [entry.sha256, entry.consumer]),
);
const deprecation = document.paths["/pets/{petId}"].get["x-gateway-deprecation"] as {
  since: string;
  sunset: string;
};
const DEPRECATED = {
  deprecation: `@${Math.floor(Date.parse(deprecation.since) / 1000)}`,
  sunset: new Date(deprecation.sunset).toUTCString(),
  link: '</v1/pets>; rel="successor-version"',
};

const registry = new Registry();
const duration = new Histogram({
  name: "http_server_request_duration_seconds",
  help: "request duration",
  labelNames: ["operation", "method", "status"],
  registers: [registry],
});
const log = pino(pino.destination({ dest: "/dev/null", sync: false }));

type Operation = keyof typeof validators;
const app = Fastify({ logger: false, keepAliveTimeout: 75_000, requestTimeout: 30_000 });
await app.register(replyFrom, {
  base: values.target,
  undici: { connections: 256, pipelining: 1, keepAliveTimeout: 4000 },
});

const UNAUTHENTICATED = '{"code":"UNAUTHENTICATED","message":"no known key","status":401}';
const BROKEN = '{"code":"UPSTREAM_INVALID_RESPONSE","message":"bad answer","status":502}';

function forward(operation: Operation, upstreamPath: string, request: FastifyRequest, reply: FastifyReply) {
  const started = performance.now();
  const authorization = request.headers.authorization ?? "";
  const consumer = authorization.startsWith("Bearer ")
    ? consumers.get(hash("sha256", authorization.slice(7), "hex"))
    : undefined;
  if (consumer === undefined) return reply.code(401).type("application/json").send(UNAUTHENTICATED);
  if (operation === "getPet") reply.headers(DEPRECATED);
  return reply.from(upstreamPath, {
    timeout: DEADLINE_MS,
    onResponse(_request, reply, response) {
      const chunks: Buffer[] = [];
      const stream = response.stream as Readable;
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        let valid = false;
        const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
        try {
          valid = validators[operation](JSON.parse(body.toString("utf8")));
        } catch {
          valid = false;
        }
        if (valid) reply.send(body);
        else reply.code(502).type("application/json").removeHeader("content-length").send(BROKEN);
        const seconds = (performance.now() - started) / 1000;
        duration.labels(operation, request.method, String(reply.statusCode)).observe(seconds);
        log.info(
          {
            reqId: request.id,
            operation,
            method: request.method,
            path: request.url,
            status: reply.statusCode,
            durationMs: seconds * 1000,
            consumer,
          },
          "request",
        );
      });
    },
  });
}

app.get("/v1/pets", (request, reply) => {
  const query = request.query as { limit?: string };
  const asked = query.limit === undefined ? limit.default : Number(query.limit);
  const clamped = Number.isInteger(asked)
    ? Math.min(limit.maximum, Math.max(limit.minimum, asked))
    : limit.default;
  return forward("listPets", `/v1/pets?limit=${clamped}`, request, reply);
});
app.get("/v1/pets/:petId", (request, reply) =>
  forward("getPet", `/v1/pets/${(request.params as { petId: string }).petId}`, request, reply),
);
app.post("/v1/pets", (request, reply) => forward("createPet", "/v1/pets", request, reply));

const url = await app.listen({ host: "127.0.0.1", port: 0 });
process.stdout.write(`${JSON.stringify({ event: "listening", url })}\n`);
process.once("SIGTERM", () => process.exit(0));
process.once("SIGINT", () => process.exit(0));

// The bundled demo Pet Store backend: a small but real in-memory implementation
// of the Pet Store interface (config/openapi.json), so the gateway can be run and
// tested end to end without the production service.
import * as http from "node:http";
import { loadApiDescription } from "./openapi.ts";
import { DEFAULT_OPENAPI_FILE } from "./project-files.ts";
import { withoutTrailingSlashes } from "./trailing-slashes.ts";

export interface DemoBackendOptions {
  /** How many animals to seed; default 6. */
  seed?: number;
  /** Path prefix of every operation; default "/v1". */
  basePath?: string;
}

// The interface's numbers and values, from the one document the gateway enforces: the page size
// default and bounds of listPets' limit, and the statuses an animal can have. The compiled
// parameter holds the schema's numbers already typed; the demo serves only a document that has them.
const { LIMIT, STATUSES } = (() => {
  const listPets = loadApiDescription(DEFAULT_OPENAPI_FILE).operation("listPets");
  const limit = listPets?.queryParameters.get("limit");
  const statuses = listPets?.queryParameters.get("status")?.schema.enum;
  const { numericDefault, minimum, maximum } = limit ?? {};
  if (numericDefault === undefined || minimum === undefined || maximum === undefined) {
    throw new Error("the document's listPets limit has no default, minimum and maximum");
  }
  if (!Array.isArray(statuses) || !statuses.every((status) => typeof status === "string")) {
    throw new Error("the document's listPets status has no enum of strings");
  }
  return { LIMIT: { default: numericDefault, minimum, maximum }, STATUSES: statuses };
})();
type PetStatus = string;

// Ids and categoryIds are int64: kept as BigInt end to end so that values above
// 2^53 survive without rounding.
interface Pet {
  id: bigint;
  name: string;
  categoryId: bigint;
  status: PetStatus;
}

interface ApiError {
  status: number;
  code: string;
  message: string;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const MAX_BODY_BYTES = 1024 * 1024;

const SEED_NAMES = ["Rex", "Whiskers", "Bubbles", "Polly", "Hammy", "Shadow", "Nibbles", "Goldie"];
// One categoryId above 2^53 on purpose: the list path then exercises int64 exactness too.
const SEED_CATEGORIES = [1n, 2n, 3n, 1n, 9007199254740993n, 2n];

function isStatus(value: unknown): value is PetStatus {
  return typeof value === "string" && STATUSES.includes(value);
}

/** Serializes a JSON value, printing BigInt as an exact integer literal. */
export function toJson(value: unknown): string {
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return `[${value.map(toJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const members = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`);
    return `{${members.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Parses JSON, turning every integer literal into a BigInt (exact, whatever its size). */
export function parseJson(text: string): unknown {
  const reviver = (_key: string, value: unknown, context?: { source?: string }): unknown =>
    typeof value === "number" && context?.source !== undefined && /^-?\d+$/.test(context.source)
      ? BigInt(context.source)
      : value;
  return JSON.parse(text, reviver);
}

function toInt64(value: unknown): bigint | undefined {
  // A number reaching here was written as 1.0 or 1e3: JSON Schema still calls it an
  // integer, but only while it is exact.
  const big =
    typeof value === "bigint" ? value : Number.isSafeInteger(value) ? BigInt(value as number) : undefined;
  return big !== undefined && big >= INT64_MIN && big <= INT64_MAX ? big : undefined;
}

function validateNewPet(body: unknown): Omit<Pet, "id"> | ApiError {
  const bad = (message: string): ApiError => ({ status: 400, code: "BAD_REQUEST", message });
  if (body === null || typeof body !== "object" || Array.isArray(body))
    return bad("body must be a JSON object (NewPet)");
  const fields = body as Record<string, unknown>;
  // The description closes NewPet (additionalProperties: false); refusing unknown
  // fields keeps the demo as strict as the gateway in front of it.
  const unknown = Object.keys(fields).filter((k) => k !== "name" && k !== "categoryId" && k !== "status");
  if (unknown.length > 0) return bad(`unknown field(s): ${unknown.join(", ")}`);
  if (typeof fields.name !== "string") return bad("name is required and must be a string");
  const categoryId = toInt64(fields.categoryId);
  if (categoryId === undefined) return bad("categoryId is required and must be an int64 integer");
  if (fields.status !== undefined && !isStatus(fields.status))
    return bad(`status must be one of ${STATUSES.join(", ")}`);
  // The interface leaves the default open; "available" is the only state it gives a meaning to.
  return { name: fields.name, categoryId, status: fields.status ?? "available" };
}

function readBody(req: http.IncomingMessage): Promise<string | ApiError> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on("end", () =>
      resolve(
        size > MAX_BODY_BYTES
          ? { status: 413, code: "PAYLOAD_TOO_LARGE", message: `body exceeds ${MAX_BODY_BYTES} bytes` }
          : Buffer.concat(chunks).toString("utf8"),
      ),
    );
    // An aborted upload has nobody left to answer; resolving keeps the handler from hanging.
    req.on("error", () => resolve({ status: 400, code: "BAD_REQUEST", message: "request body aborted" }));
  });
}

export function createDemoBackend(options: DemoBackendOptions = {}): http.Server {
  const basePath = withoutTrailingSlashes(options.basePath ?? "/v1");
  const seed = options.seed ?? 6;
  if (!Number.isInteger(seed) || seed < 0)
    throw new RangeError(`seed must be a non-negative integer, got ${seed}`);

  // A Map keeps insertion order, and ids are assigned in increasing order, so
  // iterating it is already "ascending id order".
  const pets = new Map<bigint, Pet>();
  let nextId = 1n;
  const add = (pet: Omit<Pet, "id">): Pet => {
    const created = { id: nextId++, ...pet };
    pets.set(created.id, created);
    return created;
  };
  for (let i = 0; i < seed; i++) {
    const base = SEED_NAMES[i % SEED_NAMES.length] ?? "Pet";
    add({
      name: i < SEED_NAMES.length ? base : `${base} ${Math.floor(i / SEED_NAMES.length) + 1}`,
      categoryId: SEED_CATEGORIES[i % SEED_CATEGORIES.length] ?? 1n,
      status: STATUSES[i % STATUSES.length] ?? "available",
    });
  }

  function send(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ): void {
    const payload = Buffer.from(toJson(body), "utf8");
    res.writeHead(status, {
      ...headers,
      "Content-Type": "application/json",
      "Content-Length": String(payload.length),
    });
    res.end(req.method === "HEAD" ? undefined : payload);
  }
  function fail(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    error: ApiError,
    headers?: Record<string, string>,
  ): void {
    send(req, res, error.status, { code: error.code, message: error.message, status: error.status }, headers);
  }

  function listPets(req: http.IncomingMessage, res: http.ServerResponse, query: URLSearchParams): void {
    const limits = query.getAll("limit");
    const statuses = query.getAll("status");
    if (limits.length > 1 || statuses.length > 1) {
      return fail(req, res, {
        status: 400,
        code: "BAD_REQUEST",
        message: "limit and status may each be given once",
      });
    }
    let limit = LIMIT.default;
    if (limits[0] !== undefined) {
      limit = /^\d{1,9}$/.test(limits[0]) ? Number(limits[0]) : Number.NaN;
      if (!(limit >= LIMIT.minimum && limit <= LIMIT.maximum)) {
        return fail(req, res, {
          status: 400,
          code: "BAD_REQUEST",
          message: `limit must be an integer from ${LIMIT.minimum} to ${LIMIT.maximum}`,
        });
      }
    }
    const status = statuses[0];
    if (status !== undefined && !isStatus(status)) {
      return fail(req, res, {
        status: 400,
        code: "BAD_REQUEST",
        message: `status must be one of ${STATUSES.join(", ")}`,
      });
    }
    const page: Pet[] = [];
    for (const pet of pets.values()) {
      if (page.length >= limit) break;
      if (status === undefined || pet.status === status) page.push(pet);
    }
    send(req, res, 200, page);
  }

  async function createPet(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const text = await readBody(req);
    if (typeof text !== "string") return fail(req, res, text);
    let body: unknown;
    try {
      body = parseJson(text);
    } catch {
      return fail(req, res, { status: 400, code: "BAD_REQUEST", message: "body is not valid JSON" });
    }
    const newPet = validateNewPet(body);
    if ("code" in newPet) return fail(req, res, newPet);
    const pet = add(newPet);
    send(req, res, 201, pet, { Location: `${basePath}/pets/${pet.id}` });
  }

  function getPet(req: http.IncomingMessage, res: http.ServerResponse, rawId: string): void {
    // A petId that is not an int64 cannot name an animal, so it is as absent as an unknown one.
    const id = /^\d{1,19}$/.test(rawId) ? BigInt(rawId) : undefined;
    const pet = id === undefined ? undefined : pets.get(id);
    if (pet === undefined)
      return fail(req, res, { status: 404, code: "NOT_FOUND", message: `no animal with id ${rawId}` });
    send(req, res, 200, pet);
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // The gateway in front has already checked the key, so any non-empty bearer token is accepted.
    if (!/^Bearer[ \t]+\S/i.test(req.headers.authorization ?? "")) {
      return fail(
        req,
        res,
        {
          status: 401,
          code: "UNAUTHORIZED",
          message: "missing or invalid API key (Authorization: Bearer <API_KEY>)",
        },
        { "WWW-Authenticate": "Bearer" },
      );
    }
    // Split by hand instead of new URL(): a request target such as "//x/y" would otherwise be read as a host.
    const rawUrl = req.url ?? "/";
    const q = rawUrl.indexOf("?");
    const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
    const query = new URLSearchParams(q === -1 ? "" : rawUrl.slice(q + 1));
    const method = req.method ?? "GET";
    const notAllowed = (allow: string): void =>
      fail(
        req,
        res,
        { status: 405, code: "METHOD_NOT_ALLOWED", message: `${method} is not allowed on ${path}` },
        { Allow: allow },
      );

    if (path === `${basePath}/pets`) {
      if (method === "GET" || method === "HEAD") return listPets(req, res, query);
      if (method === "POST") return createPet(req, res);
      return notAllowed("GET, HEAD, POST");
    }
    const match = path.startsWith(`${basePath}/pets/`) ? path.slice(basePath.length + 6) : undefined;
    if (match !== undefined && match !== "" && !match.includes("/")) {
      if (method === "GET" || method === "HEAD") return getPet(req, res, match);
      return notAllowed("GET, HEAD");
    }
    fail(req, res, { status: 404, code: "NOT_FOUND", message: `no route for ${path}` });
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) fail(req, res, { status: 500, code: "INTERNAL", message: "internal error" });
      else res.destroy();
    });
  });
  // Node's default answer to an unparsable request is a bare 400; keep even that one JSON.
  server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
    if (err.code === "ECONNRESET" || !socket.writable) return void socket.destroy();
    const body = toJson({ code: "BAD_REQUEST", message: "malformed HTTP request", status: 400 });
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}

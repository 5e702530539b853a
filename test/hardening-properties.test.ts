// Property-based tests: tens of thousands of generated paths, query strings, headers and JSON
// bodies, seeded (FC_SEED=<n> replays a run). Whatever comes in, every answer has a status the
// docs list, every error body is the interface's Error object, there is no 5xx unless the
// backend was made to fail, and the backend only ever sees canonical, validated requests.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { parseRequestJson } from "../src/json/request-body.ts";
import { contractAnswer } from "./fixtures/contract-answer.ts";
import {
  type Behaviour,
  type ProgrammableBackend,
  type RecordedRequest,
  startProgrammableBackend,
} from "./fixtures/programmable-backend.ts";
import { watchForCrashes } from "./support/crashes.ts";
import { DOCUMENTED_STATUSES } from "./support/documented-statuses.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { writeKeysFile } from "./support/keys.ts";
import { assertNoSecrets, capturedOutputs } from "./support/secrets.ts";

const SEED = Number(process.env.FC_SEED ?? 20_261_122);
// The one case-count variable: each property's count below is the long run's (`npm run test:slow`,
// PROPERTY_SCALE=1); `npm test` runs a tenth of each.
const PROPERTY_SCALE = Number(process.env.PROPERTY_SCALE ?? 0.1);
const runs = (full: number) => Math.max(1, Math.round(full * PROPERTY_SCALE));
const keys = writeKeysFile(["acme"]);
const { key } = keys;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const INTEGER_LITERAL = /^-?(?:0|[1-9][0-9]*)$/;
const STATUSES = ["available", "pending", "sold"];
const HOP_BY_HOP = [
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "te",
  "trailer",
  "upgrade",
];
const SPOOFABLE = [
  "forwarded",
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
  "x-original-url",
];

interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

// ---------------------------------------------------------------------------------------------
// JSON as a tree that can say what JSON.parse hides: duplicate names, a number's exact source.
type Json =
  | { readonly t: "object"; readonly members: readonly (readonly [string, Json])[] }
  | { readonly t: "array"; readonly items: readonly Json[] }
  | { readonly t: "number"; readonly source: string }
  | { readonly t: "string"; readonly value: string }
  | { readonly t: "literal"; readonly source: "true" | "false" | "null" };

const PROTOTYPE_KEYS = ["__proto__", "constructor", "prototype"];
const numberSource = fc.oneof(
  { arbitrary: fc.bigInt(INT64_MIN, INT64_MAX).map(String), weight: 2 },
  { arbitrary: fc.integer({ min: -1000, max: 1000 }).map(String), weight: 2 },
  fc.bigInt({ min: -(2n ** 200n), max: 2n ** 200n }).map(String),
  fc.constantFrom(
    "1.0",
    "1e3",
    "1E400",
    "-1e-400",
    "-0",
    "0.5",
    "12345678901234567890.0",
    "9223372036854775808",
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
);
const text = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.constantFrom("", "\ud800", "\udfff", "a\u0000b", "‮", "𝔭𝔢𝔱", "Rex", ...STATUSES, "Available"),
);
const memberName = fc.oneof(
  { arbitrary: fc.constantFrom("name", "categoryId", "status"), weight: 6 },
  { arbitrary: fc.constantFrom(...PROTOTYPE_KEYS, "id", "Name", ""), weight: 1 },
  { arbitrary: text, weight: 1 },
);
const jsonTree: fc.Arbitrary<Json> = fc.letrec<{ node: Json }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    numberSource.map((source) => ({ t: "number", source }) as const),
    text.map((value) => ({ t: "string", value }) as const),
    fc.constantFrom("true", "false", "null").map((source) => ({ t: "literal", source }) as const),
    fc.array(tie("node"), { maxLength: 4 }).map((items) => ({ t: "array", items }) as const),
    fc
      .array(fc.tuple(memberName, tie("node")), { maxLength: 5 })
      .map((members) => ({ t: "object", members }) as const),
  ),
})).node;
const deep = fc.tuple(fc.integer({ min: 1, max: 120 }), fc.boolean()).map(([depth, objects]): Json => {
  let node: Json = { t: "number", source: "1" };
  for (let i = 0; i < depth; i++)
    node = objects ? { t: "object", members: [["a", node]] } : { t: "array", items: [node] };
  return node;
});
/** A NewPet, valid or nearly so: the most interesting bodies sit on the boundary. */
const newPetish = fc
  .record(
    {
      name: fc.oneof({ arbitrary: text.map((value): Json => ({ t: "string", value })), weight: 5 }, jsonTree),
      categoryId: fc.oneof(
        { arbitrary: numberSource.map((source): Json => ({ t: "number", source })), weight: 5 },
        jsonTree,
      ),
      status: fc.oneof(
        { arbitrary: fc.constantFrom(...STATUSES).map((value): Json => ({ t: "string", value })), weight: 5 },
        jsonTree,
      ),
      extra: fc.oneof(
        { arbitrary: fc.constant([]), weight: 3 },
        fc.array(fc.tuple(memberName, jsonTree), { minLength: 1, maxLength: 2 }),
      ),
    },
    { requiredKeys: ["extra"] },
  )
  .map(
    ({ extra, ...fields }): Json => ({
      t: "object",
      members: [
        ...Object.entries(fields).filter((entry): entry is [string, Json] => entry[1] !== undefined),
        ...extra,
      ],
    }),
  );

/** Writes the tree as JSON text; `escaped` spells some names and strings with \u escapes. */
function render(node: Json, escaped: boolean, space: string): string {
  const string = (value: string) =>
    escaped
      ? JSON.stringify(value).replace(/[a-z_]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
      : JSON.stringify(value);
  switch (node.t) {
    case "number":
    case "literal":
      return node.source;
    case "string":
      return string(node.value);
    case "array":
      return `[${node.items.map((item) => render(item, escaped, space)).join(`,${space}`)}]`;
    case "object":
      return `{${space}${node.members.map(([k, v]) => `${string(k)}${space}:${render(v, escaped, space)}`).join(`,${space}`)}}`;
  }
}

function depthOf(node: Json): number {
  if (node.t === "array") return 1 + Math.max(0, ...node.items.map(depthOf));
  if (node.t === "object") return 1 + Math.max(0, ...node.members.map(([, v]) => depthOf(v)));
  return 0;
}

/** The gateway's rules for any JSON body, stated independently of src/json/. */
function genericProblem(node: Json): string | undefined {
  if (depthOf(node) > 32) return "too deep";
  const visit = (n: Json): string | undefined => {
    if (n.t === "number") {
      if (INTEGER_LITERAL.test(n.source)) {
        const exact = BigInt(n.source);
        return exact < INT64_MIN || exact > INT64_MAX ? "int64 range" : undefined;
      }
      return Number.isInteger(Number(n.source)) ? "integral non-literal" : undefined;
    }
    if (n.t === "array") return n.items.map(visit).find((p) => p !== undefined);
    if (n.t === "object") {
      const names = n.members.map(([k]) => k);
      if (new Set(names).size !== names.length) return "duplicate name";
      if (names.some((k) => PROTOTYPE_KEYS.includes(k))) return "prototype key";
      return n.members.map(([, v]) => visit(v)).find((p) => p !== undefined);
    }
    return undefined;
  };
  return visit(node);
}

/** A valid NewPet per the interface: exactly what the backend may ever receive on createPet. */
function isValidNewPet(node: Json): boolean {
  if (genericProblem(node) !== undefined || node.t !== "object") return false;
  const fields = new Map(node.members);
  if ([...fields.keys()].some((k) => !["name", "categoryId", "status"].includes(k))) return false;
  const name = fields.get("name");
  const categoryId = fields.get("categoryId");
  const status = fields.get("status");
  if (name?.t !== "string" || categoryId?.t !== "number" || !INTEGER_LITERAL.test(categoryId.source))
    return false;
  return status === undefined || (status.t === "string" && STATUSES.includes(status.value));
}

// ---------------------------------------------------------------------------------------------
// Paths and query strings, from pieces that sit on the boundaries of the canonical form.
const segment = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      "v1",
      "pets",
      "1",
      "42",
      "-1",
      "007",
      "0",
      "9223372036854775807",
      "9223372036854775808",
    ),
    weight: 6,
  },
  {
    arbitrary: fc.constantFrom(
      "..",
      ".",
      "",
      "%2e",
      "%2E%2e",
      "%2f",
      "%5c",
      "\\",
      ";x",
      "pets;",
      "a%00",
      "%41",
      "store",
      "orders",
      "~",
      "1e3",
      "+1",
      "0x1",
      "%",
    ),
    weight: 3,
  },
  { arbitrary: fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@%\\-]{0,12}$/), weight: 2 },
);
const path = fc.oneof(
  {
    arbitrary: fc
      .array(segment, { maxLength: 3 })
      .map((rest) => `/v1/pets${rest.map((s) => `/${s}`).join("")}`),
    weight: 3,
  },
  {
    arbitrary: fc.array(segment, { minLength: 1, maxLength: 5 }).map((all) => `/${all.join("/")}`),
    weight: 1,
  },
);

function isCanonicalPath(p: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are not canonical
  if (/[%\\;\u0000-\u0020\u007f]/.test(p) || p.includes("//")) return false;
  return !p.split("/").some((s) => s === "." || s === "..");
}

const queryName = fc.oneof(
  { arbitrary: fc.constantFrom("limit", "status"), weight: 6 },
  {
    arbitrary: fc.constantFrom(
      "LIMIT",
      "limit[]",
      "offset",
      "",
      "%6cimit",
      "lim%69t",
      "status%20",
      "st+atus",
    ),
    weight: 1,
  },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 6 }).map(encodeURIComponent), weight: 1 },
);
const queryValue = fc.oneof(
  { arbitrary: fc.integer({ min: -200, max: 300 }).map(String), weight: 4 },
  { arbitrary: fc.constantFrom(...STATUSES), weight: 4 },
  {
    arbitrary: fc.constantFrom(
      "",
      "007",
      "1.0",
      "1e2",
      "+5",
      "%35",
      "99999999999999999999",
      "Available",
      "sold%00",
      "%zz",
      "%",
      "a+b",
      "%E2%82",
    ),
    weight: 2,
  },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 8 }).map(encodeURIComponent), weight: 1 },
);
const query = fc.array(
  fc.oneof(
    fc.tuple(queryName, queryValue).map(([n, v]) => `${n}=${v}`),
    queryName,
    fc.constant(""),
  ),
  { maxLength: 4 },
);

/** What the gateway must do with a listPets query: the decoded parameters, or that it refuses. */
function expectedQuery(pairs: readonly string[]): Map<string, string> | "refused" {
  const decoded = new Map<string, string>();
  const decode = (s: string) => decodeURIComponent(s.replaceAll("+", " "));
  for (const pair of pairs) {
    if (pair === "") continue;
    const equals = pair.indexOf("=");
    let name: string;
    let value: string;
    try {
      name = decode(equals === -1 ? pair : pair.slice(0, equals));
      value = equals === -1 ? "" : decode(pair.slice(equals + 1));
    } catch {
      return "refused";
    }
    if (decoded.has(name)) return "refused";
    decoded.set(name, value);
  }
  for (const [name, value] of decoded) {
    if (name === "limit" && !INTEGER_LITERAL.test(value)) return "refused";
    if (name === "status" && !STATUSES.includes(value)) return "refused";
    if (name !== "limit" && name !== "status") return "refused";
  }
  return decoded;
}

// ---------------------------------------------------------------------------------------------
describe("property-based: whatever comes in, the answers are documented and the backend sees only valid requests", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let faultGw: TestGateway;
  let agent: http.Agent;
  const crashes = watchForCrashes();
  let cases = 0;
  /** How the generated requests were answered, to show the generators reach both sides. */
  const tally = new Map<string, number>();
  const count = (what: string) => tally.set(what, (tally.get(what) ?? 0) + 1);
  const errorBodies: string[] = [];
  before(async () => {
    backend = await startProgrammableBackend();
    backend.behave(contractAnswer);
    // A generous deadline where no fault is injected, so a load spike on a shared machine is never
    // mistaken for a 504; a short one on the gateway that faces the injected hangs.
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: {
        upstream: { timeoutMs: 2000 },
        policies: { responseContract: { mode: "enforce" } },
      },
    });
    faultGw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      config: {
        upstream: { timeoutMs: 150 },
        policies: { responseContract: { mode: "enforce" } },
      },
    });
    agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  });
  after(async () => {
    agent.destroy();
    const outputsGw = await capturedOutputs(gw, errorBodies);
    const outputsFaultGw = await capturedOutputs(faultGw, errorBodies);
    await gw.close();
    await faultGw.close();
    await backend.close();
    crashes.stop();
    assert.deepEqual(crashes.crashes, []);
    process.stdout.write(
      `# property cases over HTTP: ${cases} ${JSON.stringify(Object.fromEntries(tally))}\n`,
    );
    assertNoSecrets(keys.keys, outputsGw, "everything the gateway wrote");
    assertNoSecrets(keys.keys, outputsFaultGw, "everything the fault-facing gateway wrote");
  });

  /** Sends one request on the keep-alive agent; returns the answer and what the backend saw. */
  const send = async (
    method: string,
    target: string,
    headers: Record<string, string> = {},
    body?: Buffer,
    to: TestGateway = gw,
  ): Promise<{ answer: Answer; seen: RecordedRequest[] }> => {
    cases++;
    const before = backend.requests.length;
    const answer = await new Promise<Answer>((resolve, reject) => {
      // Host, port and path apart: a URL string would have its dot segments resolved client-side.
      const req = http.request(
        {
          host: "127.0.0.1",
          port: new URL(to.origin).port,
          path: target,
          method,
          agent,
          headers: { authorization: `Bearer ${key}`, ...headers },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString("utf8"),
            }),
          );
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      // A hang is a failure of its own, not a wait for the test runner's timeout.
      req.setTimeout(5000, () => req.destroy(new Error(`no answer within 5 s to ${method} ${target}`)));
      req.end(body);
    });
    return { answer, seen: backend.requests.slice(before) };
  };

  /** What holds for every answer, whatever the request. */
  const documented = (answer: Answer, faultInjected = false, passedThrough?: number) => {
    assert.ok(
      DOCUMENTED_STATUSES.has(answer.status),
      `status ${answer.status} is not in the error catalogue`,
    );
    assert.equal(answer.headers["x-content-type-options"], "nosniff");
    count(String(answer.status));
    if (answer.status >= 400) errorBodies.push(answer.body);
    // The backend's own error answers pass through as they are; the gateway's are Error objects.
    if (answer.status >= 400 && answer.body !== "" && answer.status !== passedThrough) {
      const error = JSON.parse(answer.body) as { status: number };
      assert.ok(gw.gateway.api.validateError(error), answer.body);
      assert.equal(error.status, answer.status);
    }
    if (!faultInjected) assert.ok(answer.status < 500, `${answer.status} without a fault: ${answer.body}`);
  };

  test("paths: a canonical route reaches the backend as sent; anything else never reaches it", async () => {
    await fc.assert(
      fc.asyncProperty(path, fc.constantFrom("GET", "GET", "HEAD", "DELETE"), async (p, method) => {
        const { answer, seen } = await send(method, p);
        documented(answer);
        if (!isCanonicalPath(p)) assert.equal(answer.status, 400, `${p} is not canonical`);
        if (answer.status === 200) {
          assert.equal(seen.length, 1);
          const url = seen[0]?.url.split("?")[0];
          assert.equal(url, p, "the backend got the path the policies judged");
          assert.match(url ?? "", /^\/v1\/pets(?:\/-?(?:0|[1-9][0-9]*))?$/);
        } else assert.deepEqual(seen, []);
      }),
      { seed: SEED, numRuns: runs(3000) },
    );
  });

  test("query strings: listPets reaches the backend only with known, single, valid parameters", async () => {
    await fc.assert(
      fc.asyncProperty(query, async (pairs) => {
        const q = pairs.join("&");
        const { answer, seen } = await send("GET", `/v1/pets${q === "" ? "" : `?${q}`}`);
        documented(answer);
        const expected = expectedQuery(pairs);
        assert.equal(answer.status, expected === "refused" ? 400 : 200, `?${q}: ${answer.body}`);
        if (expected === "refused") return assert.deepEqual(seen, []);
        assert.equal(seen.length, 1);
        const forwarded = new URL(seen[0]?.url ?? "", "http://backend").searchParams;
        const names = [...forwarded.keys()];
        assert.equal(new Set(names).size, names.length, "no parameter twice");
        assert.ok(
          names.every((n) => n === "limit" || n === "status"),
          names.join(),
        );
        const limit = forwarded.get("limit") ?? "";
        assert.match(limit, /^(?:[1-9]|[1-9][0-9]|100)$/, `limit ${limit}`);
        const status = forwarded.get("status");
        assert.equal(status, expected.get("status") ?? null);
      }),
      { seed: SEED + 1, numRuns: runs(3000) },
    );
  });

  test("headers: hop-by-hop, Connection-named and spoofing headers never reach the backend", async () => {
    const name = fc.oneof(
      fc.constantFrom(
        // Node's client refuses to send Trailer on a body that is not chunked: the raw probes cover it.
        ...HOP_BY_HOP.filter((h) => h !== "connection" && h !== "trailer"),
        ...SPOOFABLE,
        "x-forwarded-for",
        "x-forwarded-host",
        "x-consumer",
        "expect",
        "x-request-id",
        "accept-encoding",
      ),
      fc.stringMatching(/^x-[a-z0-9-]{1,10}$/),
    );
    const value = fc.stringMatching(/^[\x20-\x7e]{0,30}$/).map((v) => v.trim());
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(name, value, { maxKeys: 6 }),
        fc.array(fc.oneof(name, fc.constantFrom("close", "keep-alive", "upgrade")), { maxLength: 3 }),
        async (headers, connectionNames) => {
          const sent: Record<string, string> = { ...headers };
          if (connectionNames.length > 0) sent.connection = connectionNames.join(", ");
          const { answer, seen } = await send("GET", "/v1/pets", sent);
          documented(answer);
          assert.equal(answer.status, 200, answer.body);
          const received = seen[0]?.headers ?? {};
          // The gateway's own connection to the backend is kept alive; the client's word on it is not passed on.
          assert.ok(
            received.connection === undefined || received.connection === "keep-alive",
            received.connection,
          );
          for (const hop of [...HOP_BY_HOP.slice(1), ...SPOOFABLE, "expect"])
            assert.equal(received[hop], undefined, hop);
          // What the gateway sets itself for the backend is its own, whatever Connection names.
          const own = [
            "close",
            "keep-alive",
            "upgrade",
            "x-forwarded-for",
            "x-forwarded-host",
            "x-consumer",
            "x-request-id",
            "accept-encoding",
          ];
          for (const named of connectionNames) {
            if (!own.includes(named)) assert.equal(received[named], undefined, named);
          }
          assert.equal(received["x-forwarded-for"], "127.0.0.1");
          assert.equal(received["x-consumer"], "acme");
          for (const hop of ["proxy-authenticate", "trailer", "upgrade", "te"])
            assert.equal(answer.headers[hop], undefined);
        },
      ),
      { seed: SEED + 2, numRuns: runs(2000) },
    );
  });

  test("JSON bodies: createPet reaches the backend, byte for byte, exactly when the body is a valid NewPet", async () => {
    const body = fc.oneof(
      { arbitrary: newPetish, weight: 6 },
      { arbitrary: jsonTree, weight: 2 },
      { arbitrary: deep, weight: 1 },
    );
    await fc.assert(
      fc.asyncProperty(body, fc.boolean(), fc.constantFrom("", " ", "\n\t"), async (tree, escaped, space) => {
        const raw = Buffer.from(render(tree, escaped, space), "utf8");
        const { answer, seen } = await send("POST", "/v1/pets", { "content-type": "application/json" }, raw);
        documented(answer);
        if (isValidNewPet(tree)) {
          assert.equal(answer.status, 201, `${raw}: ${answer.body}`);
          assert.equal(seen.length, 1);
          assert.ok(seen[0]?.body.equals(raw), "the backend got the bytes that were validated");
        } else {
          assert.equal(answer.status, 400, `${raw} was accepted: ${answer.body}`);
          assert.deepEqual(seen, []);
        }
      }),
      { seed: SEED + 3, numRuns: runs(4000) },
    );
  });

  test("bytes that are not JSON, or not UTF-8, or not declared JSON, never reach the backend", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        fc.constantFrom(
          "application/json",
          "application/json; charset=utf-8",
          "text/plain",
          "application/x-www-form-urlencoded",
          "APPLICATION/JSON",
        ),
        async (bytes, type) => {
          const raw = Buffer.from(bytes);
          const { answer, seen } = await send("POST", "/v1/pets", { "content-type": type }, raw);
          documented(answer);
          assert.ok([400, 415].includes(answer.status), `${answer.status} for ${raw.toString("hex")}`);
          assert.deepEqual(seen, []);
        },
      ),
      { seed: SEED + 4, numRuns: runs(600) },
    );
  });

  test("backend faults: the client gets 502 or 504 with an Error body, never a hang, and the gateway goes on", async () => {
    const fault = fc.constantFrom<Behaviour>(
      { kind: "reset-before-headers" },
      { kind: "hang" },
      { kind: "reset-mid-body", status: 200, bodyPrefix: '{"id":1,', declaredLength: 300 },
      { kind: "respond", status: 200, headers: { "content-type": "application/json" }, body: '{"id":"x"}' },
      { kind: "respond", status: 200, headers: { "content-type": "text/html" }, body: "<h1>hi</h1>" },
      { kind: "respond", status: 503, headers: { "content-type": "application/json" }, body: "{}" },
      { kind: "respond", status: 200, headers: { "content-type": "application/json" }, body: "" },
    );
    try {
      await fc.assert(
        fc.asyncProperty(fault, fc.bigInt(1n, INT64_MAX), async (behaviour, id) => {
          backend.behave(() => behaviour);
          const { answer } = await send("GET", `/v1/pets/${id}`, {}, undefined, faultGw).catch(
            (error: Error) => {
              // A body cut mid-way may surface as a broken response: that is allowed, a hang is not.
              assert.match(error.message, /aborted|socket hang up|ECONNRESET/);
              return { answer: undefined };
            },
          );
          if (answer) {
            const passedThrough =
              behaviour.kind === "respond" && behaviour.status >= 500 ? behaviour.status : undefined;
            documented(answer, true, passedThrough);
            assert.ok(
              [502, 504, passedThrough].includes(answer.status),
              `${behaviour.kind}: ${answer.status}`,
            );
          }
        }),
        { seed: SEED + 5, numRuns: runs(200) },
      );
    } finally {
      backend.behave(contractAnswer);
    }
    const { answer } = await send("GET", "/v1/pets", {}, undefined, faultGw);
    assert.equal(answer.status, 200);
  });
});

describe("property-based: the body parser against an independent statement of its rules", () => {
  test("parseRequestJson accepts a JSON text exactly when it has no duplicate or prototype names, no integral non-literals, no int64 overflow and no deep nesting", () => {
    fc.assert(
      fc.property(fc.oneof(jsonTree, newPetish, deep), fc.boolean(), (tree, escaped) => {
        const result = parseRequestJson(render(tree, escaped, ""), 32);
        const problem = genericProblem(tree);
        assert.equal(
          result.ok,
          problem === undefined,
          `${render(tree, escaped, "")}: expected ${problem ?? "ok"}`,
        );
      }),
      { seed: SEED + 6, numRuns: runs(20_000) },
    );
  });
});

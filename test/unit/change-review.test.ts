// The change review: the Pet Store document against one hand-made candidate per kind of change,
// with a small log of access lines (test/fixtures/change-review/access.log: acme, globex and
// initech within the week before NOW, hooli before it, a 401 without a consumer, a refused
// duplicate query, a collector's prefix, a broken line and a deprecated-call line). Each breaking
// change names the consumers whose logged calls it breaks, or says nobody used it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import policies from "../../policies/index.ts";
import { UsageMemory } from "../../policies/usage/usage-memory.ts";
import {
  type ChangeReview,
  ChangeReviewer,
  NO_CONSUMER,
  type RecordedUsage,
  reviewExitCode,
} from "../../src/change-review.ts";
import { reviewJson, reviewMarkdown, reviewText } from "../../src/change-review-text.ts";
import { validateConfig } from "../../src/config.ts";
import { compareDocuments } from "../../src/document-diff.ts";
import { type ApiDescription, loadApiDescription, type Operation } from "../../src/openapi.ts";
import { DEFAULT_OPENAPI_FILE, PROJECT_ROOT } from "../../src/project-files.ts";
import { withoutTerminalControls } from "../../src/terminal-text.ts";
import { loadDocument, withChoices, writeDocumentFiles } from "../support/openapi-documents.ts";

// biome-ignore lint/suspicious/noExplicitAny: a parsed document, edited in place by each test
type Document = Record<string, any>;
const PET_STORE: Document = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));
const RUNNING = loadDocument(PET_STORE);
const LOG_LINES = readFileSync(join(PROJECT_ROOT, "test/fixtures/change-review/access.log"), "utf8").split(
  "\n",
);
const NOW = Date.parse("2026-11-25T00:00:00Z");
/** The policies' options of the default config: the review compares with them, as the command does. */
const OPTIONS = validateConfig({}, policies).policies;
const diffDocuments = (running: ApiDescription, candidate: ApiDescription) =>
  compareDocuments(running, candidate, { policies, options: OPTIONS });
const DAYS = 7;

function reviewOf(
  running: ApiDescription,
  candidate: ApiDescription,
  options: { lines?: readonly string[] | undefined; maxConsumers?: number } = {},
): ChangeReview {
  const reviewer = new ChangeReviewer({
    running: { name: "running.json", api: running },
    candidate: { name: "candidate.json", api: candidate },
    differences: diffDocuments(running, candidate),
    now: NOW,
    days: DAYS,
    maxConsumers: options.maxConsumers ?? 100,
  });
  const lines = "lines" in options ? options.lines : LOG_LINES;
  if (lines !== undefined) {
    reviewer.markLogsGiven();
    for (const line of lines) reviewer.readLine(line);
  }
  return reviewer.review();
}

/** The review of the Pet Store document against a copy that `change` edited. */
function reviewAfter(change: (document: Document) => void, options?: Parameters<typeof reviewOf>[2]) {
  const candidate = structuredClone(PET_STORE);
  change(candidate);
  return reviewOf(RUNNING, loadDocument(candidate), options);
}

/** consumer -> calls of the one breaking change of `kind` (fails when there is none, or several). */
function hits(review: ChangeReview, kind: string, location?: string): Record<string, number> {
  const matching = review.changes.filter(
    (c) => c.breaking && c.kind === kind && (location === undefined || c.location === location),
  );
  assert.equal(matching.length, 1, `one breaking ${kind} in ${JSON.stringify(review.changes, null, 1)}`);
  const usage = matching[0]?.usage;
  assert.ok(usage, "logs were given: the change says whom it hits");
  return Object.fromEntries(usage.consumers.map((use) => [use.consumer, use.calls]));
}

function attribution(review: ChangeReview, kind: string): string | undefined {
  return review.changes.find((c) => c.breaking && c.kind === kind)?.usage?.attribution;
}

const listPets = (d: Document) => d.paths["/pets"].get;
const getPet = (d: Document) => d.paths["/pets/{petId}"].get;

describe("each breaking change names the consumers whose logged calls it breaks", () => {
  test("an operation removed: everyone who called it in the window", () => {
    const review = reviewAfter((d) => delete d.paths["/pets/{petId}"]);
    assert.deepEqual(hits(review, "operation-removed"), { initech: 2 });
    assert.equal(reviewExitCode(review), 1);
  });

  test("a query parameter removed: those who sent it, not those who called without it", () => {
    const review = reviewAfter((d) => listPets(d).parameters.pop());
    // globex's duplicated status was refused by the gateway then: the candidate changes nothing for it.
    assert.deepEqual(hits(review, "parameter-removed"), { acme: 2, globex: 1 });
  });

  test("a query parameter made required: those who called without it", () => {
    const review = reviewAfter((d) => {
      listPets(d).parameters[0].required = true;
    });
    assert.deepEqual(hits(review, "parameter-made-required"), { globex: 2, acme: 1 });
  });

  test("an enum value removed: those who sent that value, read with the gateway's own query parser", () => {
    const review = reviewAfter((d) => {
      listPets(d).parameters[1].schema = { type: "string", enum: ["available", "pending"] };
    });
    // hooli sent it too, before the window.
    assert.deepEqual(hits(review, "enum-value-removed", "query parameter status"), { acme: 2 });
    const change = review.changes.find((c) => c.kind === "enum-value-removed");
    assert.equal(change?.usage?.consumers[0]?.lastSeen, Date.parse("2026-11-24T09:00:00Z"));
  });

  test("a bound tightened: those whose values the candidate refuses, by the gateway's own check", () => {
    const review = reviewAfter((d) => {
      listPets(d).parameters[0].schema.maximum = 50;
    });
    // acme sent limit=80; the 401 without a consumer sent limit=10.
    assert.deepEqual(hits(review, "bound-tightened"), { acme: 1 });
  });

  test("a response status removed: those who received it", () => {
    const review = reviewAfter((d) => delete getPet(d).responses["404"]);
    assert.deepEqual(hits(review, "status-removed"), { initech: 1 });
  });

  test("a response status added: every caller of the operation, who may switch over the statuses", () => {
    const review = reviewAfter((d) => {
      listPets(d).responses["429"] = { description: "slow down" };
    });
    assert.deepEqual(hits(review, "status-added"), { globex: 3, acme: 2, [NO_CONSUMER]: 1 });
  });

  test("security changed: every caller of the operation", () => {
    const review = reviewAfter((d) => {
      d.components.securitySchemes.apiKey = { type: "apiKey", in: "header", name: "x-api-key" };
      listPets(d).security = [{ apiKey: [] }];
    });
    assert.deepEqual(hits(review, "security-strengthened"), { globex: 3, acme: 2, [NO_CONSUMER]: 1 });
  });

  test("a sunset moved earlier: every caller of the deprecated operation", () => {
    const review = reviewAfter((d) => {
      getPet(d)["x-gateway-deprecation"].sunset = "2029-01-01T00:00:00Z";
    });
    assert.deepEqual(hits(review, "sunset-earlier"), { initech: 2 });
  });

  test("a base path changed: every call that reached an operation", () => {
    const review = reviewAfter((d) => {
      d.servers = [{ url: "https://petstore.example.com/v2" }];
    });
    assert.deepEqual(hits(review, "base-path-changed"), {
      acme: 3,
      globex: 3,
      initech: 2,
      [NO_CONSUMER]: 1,
    });
  });

  test("a request-body member made required is not recorded: the operation's callers are named", () => {
    const review = reviewAfter((d) => {
      d.components.schemas.NewPet.properties.nickname = { type: "string" };
      d.components.schemas.NewPet.required.push("nickname");
    });
    assert.deepEqual(hits(review, "member-made-required"), { acme: 1 });
    assert.equal(attribution(review, "member-made-required"), "callers");
    assert.match(
      reviewText(review),
      /not recorded; callers of createPet who may rely on it:\n\s+acme: 1 call, last 1 day ago/,
    );
  });

  test("a response member removed is not recorded: the operation's callers are named", () => {
    const review = reviewAfter((d) => {
      delete d.components.schemas.Pet.properties.name;
      d.components.schemas.Pet.required = d.components.schemas.Pet.required.filter(
        (n: string) => n !== "name",
      );
    });
    const removed = review.changes.filter((c) => c.kind === "member-removed" && c.breaking);
    assert.deepEqual(
      removed.map((c) => [c.operation, c.usage?.attribution, c.usage?.consumers.map((u) => u.consumer)]),
      [
        ["listPets", "callers", ["globex", "acme", NO_CONSUMER]],
        ["createPet", "callers", ["acme"]],
        ["getPet", "callers", ["initech"]],
      ],
    );
  });
});

describe("what nobody used", () => {
  test("a breaking change no consumer used in the window says so, and the review exits 0", () => {
    const review = reviewAfter((d) => delete getPet(d).responses["401"]);
    assert.deepEqual(hits(review, "status-removed"), {});
    assert.equal(reviewExitCode(review), 0);
    assert.match(
      reviewText(review),
      /no longer answers 401 \[response\]\n\s+no consumer used this in 7 days/,
    );
  });

  test("without logs, a breaking change is nobody's to clear: exit 1, and who is unknown", () => {
    const review = reviewAfter((d) => delete getPet(d).responses["401"], { lines: undefined });
    assert.equal(review.logs, undefined);
    assert.equal(reviewExitCode(review), 1);
    assert.match(reviewText(review), /who: unknown \(no logs given\)/);
  });

  test("a candidate with no breaking change exits 0 without logs", () => {
    const review = reviewAfter(
      (d) => {
        listPets(d).parameters.push({ name: "q", in: "query", schema: { type: "string" } });
      },
      { lines: undefined },
    );
    assert.deepEqual(
      review.changes.map((c) => [c.kind, c.breaking]),
      [["parameter-added", false]],
    );
    assert.equal(reviewExitCode(review), 0);
  });
});

describe("reading the logs", () => {
  test("only access lines within the days before now count; other and broken lines are skipped", () => {
    const review = reviewAfter(() => {});
    assert.deepEqual(review.logs, {
      lines: LOG_LINES.length,
      skippedLines: 0,
      calls: 10,
      usageLines: 0,
      from: Date.parse("2026-11-20T08:00:00Z"),
      to: Date.parse("2026-11-24T18:00:00Z"),
    });
  });

  test("consumers past the bound are forgotten, least recently seen first, and the forgettings counted", () => {
    const review = reviewAfter(
      (d) => {
        d.servers = [{ url: "https://petstore.example.com/v2" }];
      },
      { maxConsumers: 2 },
    );
    const usage = review.changes[0]?.usage;
    // acme, globex, initech, acme again, then the 401 without a consumer: three evictions.
    assert.deepEqual(
      usage?.consumers.map((u) => [u.consumer, u.calls]),
      [
        [NO_CONSUMER, 1],
        ["acme", 1],
      ],
    );
    assert.equal(usage?.forgotten, 3);
    assert.match(reviewText(review), /3 forgotten past --max-consumers: counts are low/);
  });
});

describe("the team's 3.0 YAML document, split over two files", () => {
  test("an enum value removed from the shared schema file names who sent it", () => {
    const fixture = join(PROJECT_ROOT, "test/fixtures/openapi-3.0");
    const running = loadApiDescription(join(fixture, "openapi.yaml"));
    const schemas = readFileSync(join(fixture, "schemas.yaml"), "utf8");
    const edited = schemas.replace("enum: [available, pending, sold]", "enum: [available, pending]");
    assert.notEqual(edited, schemas);
    const folder = writeDocumentFiles({
      "openapi.yaml": readFileSync(join(fixture, "openapi.yaml"), "utf8"),
      "schemas.yaml": edited,
    });
    const review = reviewOf(running, loadApiDescription(join(folder, "openapi.yaml")));
    assert.deepEqual(hits(review, "enum-value-removed", "query parameter status"), { acme: 2 });
    // The one Pet schema is both ways: what createPet is sent loses the value too (not recorded).
    assert.equal(
      review.changes.find((c) => c.breaking && c.location === "request body application/json")?.usage
        ?.attribution,
      "callers",
    );
    assert.equal(reviewExitCode(review), 1);
  });
});

describe("formats", () => {
  const review = reviewAfter((d) => {
    listPets(d).parameters[1].schema = { type: "string", enum: ["available", "pending"] };
    listPets(d).parameters.push({ name: "q", in: "query", schema: { type: "string" } });
  });

  test("text: breaking first with the consumers hit, then the other changes", () => {
    const text = reviewText(review);
    assert.match(
      text,
      /Breaking:\n {2}- listPets \(GET \/pets\): query parameter status: the value "sold" is removed \[request\]\n {6}acme: 2 calls, last 1 day ago\n/,
    );
    assert.ok(text.indexOf("Breaking:") < text.indexOf("Other changes:"));
    assert.match(text, /adds the optional query parameter q/);
  });

  test("markdown: a table a pull request comment shows, with others' text inert", () => {
    const withMarkup = reviewOf(RUNNING, RUNNING, {
      lines: [],
    });
    assert.match(reviewMarkdown(withMarkup), /0 breaking changes/);
    const markdown = reviewMarkdown(review);
    assert.match(markdown, /\| Operation \| Breaking change \| Side \| Who it breaks \|/);
    assert.match(
      markdown,
      /\| `listPets` GET \/pets \| query parameter status: the value "sold" is removed \| request \| acme: 2 calls, last 1 day ago \|/,
    );
    const hostile = new ChangeReviewer({
      running: { name: "running.json", api: RUNNING },
      candidate: { name: "candidate.json", api: RUNNING },
      differences: [{ ...diffOne(), message: "a | b <script>" }],
      now: NOW,
      days: DAYS,
      maxConsumers: 10,
    });
    hostile.markLogsGiven();
    hostile.readLine(
      JSON.stringify({
        time: "2026-11-24T00:00:00.000Z",
        operation: "listPets",
        consumer: "x|<img>",
        msg: "request",
      }),
    );
    const shown = reviewMarkdown(hostile.review());
    assert.match(shown, /a \\\| b &lt;script&gt;/);
    assert.match(shown, /x\\\|&lt;img&gt;: 1 call/);
  });

  test("text prints no control character of a consumer's or a document's; json escapes them", () => {
    const reviewer = new ChangeReviewer({
      running: { name: "running.json", api: RUNNING },
      candidate: { name: "candidate.json", api: RUNNING },
      differences: [{ ...diffOne(), message: "gone\u001b]0;owned\u0007" }],
      now: NOW,
      days: DAYS,
      maxConsumers: 10,
    });
    reviewer.markLogsGiven();
    reviewer.readLine(
      JSON.stringify({
        time: "2026-11-24T00:00:00.000Z",
        operation: "listPets",
        consumer: "evil\u001b[2J\u202etxt.exe\rfake",
        msg: "request",
      }),
    );
    const review = reviewer.review();
    const text = reviewText(review);
    // Every C0 but the line breaks, DEL, C1 and the bidi overrides (src/terminal-text.ts).
    assert.equal(withoutTerminalControls(text.replaceAll("\n", "")), text.replaceAll("\n", ""));
    assert.match(text, /evil\[2Jtxt\.exefake: 1 call/);
    const json = reviewJson(review);
    assert.match(json, /\\u202e/);
    assert.equal(JSON.parse(json).changes[0].usage.consumers[0].consumer, "evil\u001b[2J\u202etxt.exe\rfake");
  });

  test("json: the differences with their usage, dates as ISO instants, and the exit code", () => {
    const data = JSON.parse(reviewJson(review));
    assert.equal(data.exitCode, 1);
    assert.equal(data.days, DAYS);
    const removed = data.changes.find(
      (c: Document) =>
        c.kind === "enum-value-removed" &&
        c.direction === "request" &&
        c.location === "query parameter status",
    );
    assert.deepEqual(removed.usage, {
      attribution: "calls",
      consumers: [{ consumer: "acme", calls: 2, lastSeen: "2026-11-24T09:00:00.000Z" }],
      forgotten: 0,
    });
  });
});

/** A breaking difference every listPets call meets. */
function diffOne() {
  const candidate = structuredClone(PET_STORE);
  candidate.paths["/pets"].get.responses["429"] = { description: "slow down" };
  const found = diffDocuments(RUNNING, loadDocument(candidate));
  const added = found.find((d) => d.kind === "status-added");
  assert.ok(added);
  return added;
}

describe("usage lines (policies/usage) when the logs hold no access line", () => {
  const acme: RecordedUsage = {
    consumer: "acme",
    operation: "listPets",
    calls: 1204,
    lastSeen: Date.parse("2026-11-23T10:00:00Z"),
    parameters: ["limit", "status"],
    values: { status: ["sold"] },
    statuses: ["200"],
    members: [],
    memberValues: {},
    sampled: 0,
    answerMembers: {},
  };
  const globex: RecordedUsage = { ...acme, consumer: "globex", calls: 310, parameters: [], values: {} };
  const reviewUsage = (
    change: (d: Document) => void,
    rows: readonly RecordedUsage[],
    lines: readonly string[] = [],
  ) => {
    const candidate = structuredClone(PET_STORE);
    change(candidate);
    const api = loadDocument(candidate);
    const reviewer = new ChangeReviewer({
      running: { name: "running.json", api: RUNNING },
      candidate: { name: "candidate.json", api },
      differences: diffDocuments(RUNNING, api),
      now: NOW,
      days: DAYS,
      maxConsumers: 100,
    });
    reviewer.markLogsGiven();
    for (const row of rows) reviewer.readUsage(row);
    for (const line of lines) reviewer.readLine(line);
    return reviewer.review();
  };
  const withoutSold = (d: Document) => {
    listPets(d).parameters[1].schema = { type: "string", enum: ["available", "pending"] };
  };

  test("an enum value removed names the consumers whose lines list it, with their calls", () => {
    const review = reviewUsage(withoutSold, [
      acme,
      globex,
      { ...acme, consumer: "old", lastSeen: Date.parse("2026-10-01T00:00:00Z") },
    ]);
    assert.deepEqual(hits(review, "enum-value-removed", "query parameter status"), { acme: 1204 });
    assert.equal(review.logs?.usageLines, 2);
    assert.match(reviewText(review), /logs: 3 lines, 2 usage lines in the 7 days/);
  });

  test("a bound on a parameter without an enum names whoever sent it, as callers: values are not recorded", () => {
    const review = reviewUsage(
      (d) => {
        listPets(d).parameters[0].schema.maximum = 50;
      },
      [acme, globex],
    );
    assert.deepEqual(hits(review, "bound-tightened"), { acme: 1204 });
    assert.equal(attribution(review, "bound-tightened"), "callers");
  });

  test("a status removed names those whose lines list it", () => {
    const review = reviewUsage(
      (d) => delete listPets(d).responses["200"],
      [acme, { ...globex, statuses: ["401"] }],
    );
    assert.deepEqual(hits(review, "status-removed"), { acme: 1204 });
  });

  const importer: RecordedUsage = {
    ...acme,
    consumer: "importer",
    operation: "createPet",
    calls: 12,
    parameters: [],
    values: {},
    statuses: ["201"],
    members: ["/name", "/categoryId", "/status"],
    memberValues: { "/status": ["sold"] },
  };
  const initech: RecordedUsage = {
    ...importer,
    consumer: "initech",
    calls: 3,
    members: ["/name", "/categoryId"],
    memberValues: {},
  };

  test("a request-body enum value removed names who sent it, even beside access lines", () => {
    const review = reviewUsage(
      (d) => {
        d.components.schemas.PetStatus.enum = ["available", "pending"];
      },
      [importer, initech],
      LOG_LINES,
    );
    const body = review.changes.find((c) => c.breaking && c.location === "request body application/json");
    assert.equal(body?.pointer, "/status");
    assert.equal(body?.usage?.attribution, "calls");
    assert.deepEqual(
      body?.usage?.consumers.map((u) => [u.consumer, u.calls]),
      [["importer", 12]],
    );
    // The query parameter's removal is still read call by call from the access lines.
    assert.deepEqual(hits(review, "enum-value-removed", "query parameter status"), { acme: 2 });
  });

  test("a request-body member removed from a closed schema names who sent it", () => {
    const review = reviewUsage(
      (d) => {
        delete d.components.schemas.NewPet.properties.status;
      },
      [importer, initech],
    );
    assert.deepEqual(hits(review, "member-removed", "request body application/json"), { importer: 12 });
  });

  test("a request-body member made required names, as callers, who did not always send it", () => {
    const review = reviewUsage(
      (d) => {
        d.components.schemas.NewPet.required.push("status");
      },
      [importer, initech],
    );
    assert.deepEqual(hits(review, "member-made-required"), { initech: 3 });
    assert.equal(attribution(review, "member-made-required"), "callers");
  });

  test("a response member removed names who received it on sampled answers, and who had none sampled", () => {
    const sampledWithName = { ...acme, sampled: 40, answerMembers: { "200": ["/-", "/-/id", "/-/name"] } };
    const sampledWithout = { ...globex, sampled: 5, answerMembers: { "200": ["/-", "/-/id"] } };
    const notSampled = { ...globex, consumer: "initech", calls: 7, sampled: 0 };
    const review = reviewUsage(
      (d) => {
        delete d.components.schemas.Pet.properties.name;
        d.components.schemas.Pet.required = ["id", "categoryId"];
      },
      [sampledWithName, sampledWithout, notSampled],
      LOG_LINES,
    );
    const removed = review.changes.find((c) => c.kind === "member-removed" && c.operation === "listPets");
    assert.equal(removed?.usage?.attribution, "received");
    assert.deepEqual(
      removed?.usage?.consumers.map((u) => [u.consumer, u.calls]),
      [
        ["acme", 1204],
        ["initech", 7],
      ],
    );
    assert.match(
      reviewText(review),
      /received on sampled answers \(or none of theirs was sampled\):\n\s+acme: 1,204 calls/,
    );
  });

  test("access lines in the window win: usage lines are not counted twice", () => {
    const review = reviewUsage(withoutSold, [acme], LOG_LINES);
    assert.deepEqual(hits(review, "enum-value-removed", "query parameter status"), { acme: 2 });
  });
});

describe("oneOf and anyOf: who sent or receives the alternative a candidate changes", () => {
  // The Pet Store with choices: createPet takes a NewPet or an ImportedPet, getPet answers a Pet or an ArchivedPet.
  const CHOICES = structuredClone(PET_STORE);
  withChoices(CHOICES);
  const running = loadDocument(CHOICES);
  const reviewChoices = (
    change: (d: Document) => void,
    rows: readonly RecordedUsage[],
    lines: readonly string[] = [],
    from: ApiDescription = running,
  ) => {
    const candidate = structuredClone(CHOICES);
    change(candidate);
    const api = loadDocument(candidate);
    const reviewer = new ChangeReviewer({
      running: { name: "running.json", api: from },
      candidate: { name: "candidate.json", api },
      differences: diffDocuments(from, api),
      now: NOW,
      days: DAYS,
      maxConsumers: 100,
    });
    reviewer.markLogsGiven();
    for (const row of rows) reviewer.readUsage(row);
    for (const line of lines) reviewer.readLine(line);
    return reviewer.review();
  };
  const createBody = (d: Document) => d.paths["/pets"].post.requestBody.content["application/json"].schema;
  const row = (consumer: string, calls: number, members: string[], memberValues = {}): RecordedUsage => ({
    consumer,
    operation: "createPet",
    calls,
    lastSeen: Date.parse("2026-11-23T10:00:00Z"),
    parameters: [],
    values: {},
    statuses: ["201"],
    members,
    memberValues,
    sampled: 0,
    answerMembers: {},
  });

  test("an alternative removed from a request body names who sent members only it has", () => {
    const review = reviewChoices(
      (d) => createBody(d).oneOf.pop(),
      [
        row("importer", 40, ["/registry", "/registryId"], { "/registry": ["fci"] }),
        row("shop", 12, ["/name", "/categoryId"]),
      ],
    );
    assert.deepEqual(hits(review, "alternative-removed"), { importer: 40 });
    assert.equal(attribution(review, "alternative-removed"), "calls");
    assert.match(
      reviewText(review),
      /createPet \(POST \/pets\): request body application\/json: removes the alternative ImportedPet of its oneOf: a value of that shape is refused \[request\]\n\s+importer: 40 calls, last 2 days ago/,
    );
  });

  test("access lines alone do not hold bodies: the operation's callers are named", () => {
    const review = reviewChoices((d) => createBody(d).oneOf.pop(), [], LOG_LINES);
    assert.deepEqual(hits(review, "alternative-removed"), { acme: 1 });
    assert.equal(attribution(review, "alternative-removed"), "callers");
  });

  test("alternatives told apart by a discriminator's value: who sent that value, as the usage policy records bodies", () => {
    // A pet is a cat or a dog, by its kind; the candidate takes cats only.
    const pets = structuredClone(PET_STORE);
    const kind = (value: string) => ({
      type: "object",
      required: ["kind", "name"],
      properties: { kind: { const: value }, name: { type: "string" }, categoryId: { type: "integer" } },
    });
    pets.paths["/pets"].post.requestBody.content["application/json"].schema = {
      oneOf: [kind("cat"), kind("dog")],
    };
    const from = loadDocument(pets);
    const memory = new UsageMemory(from, 10, NOW);
    const createPet = memory.of(from.operation("createPet") as Operation);
    assert.ok(createPet);
    for (const [consumer, body] of [
      ["cattery", { kind: "cat", name: "Tom" }],
      ["kennel", { kind: "dog", name: "Rex", categoryId: 2 }],
    ] as const) {
      createPet.sentBody(consumer, Buffer.from(JSON.stringify(body)));
      createPet.answered(consumer, 201, NOW - 3_600_000);
    }
    const candidate = structuredClone(pets);
    candidate.paths["/pets"].post.requestBody.content["application/json"].schema.oneOf.pop();
    const api = loadDocument(candidate);
    const differences = diffDocuments(from, api);
    assert.deepEqual(
      differences.map((d) => [d.kind, d.alternative]),
      [["alternative-removed", { members: [], values: { "/kind": ["dog"] } }]],
    );
    const reviewer = new ChangeReviewer({
      running: { name: "running.json", api: from },
      candidate: { name: "candidate.json", api },
      differences,
      now: NOW,
      days: DAYS,
      maxConsumers: 100,
    });
    for (const recorded of memory.rows())
      reviewer.readUsage({ ...recorded, lastSeen: Date.parse(recorded.lastSeen) });
    assert.deepEqual(hits(reviewer.review(), "alternative-removed"), { kennel: 1 });
  });

  test("an alternative added to an answer names who received that answer", () => {
    const archive = (d: Document) =>
      d.paths["/pets/{petId}"].get.responses["200"].content["application/json"].schema.oneOf.push({
        type: "object",
        title: "LostPet",
      });
    // initech's calls: one answered 200, one 404.
    const fromLines = reviewChoices(archive, [], LOG_LINES);
    assert.deepEqual(hits(fromLines, "alternative-added"), { initech: 1 });
    assert.equal(attribution(fromLines, "alternative-added"), "calls");
    const fromUsage = reviewChoices(archive, [
      { ...row("initech", 9, []), operation: "getPet", statuses: ["200", "404"] },
      { ...row("missing", 3, []), operation: "getPet", statuses: ["404"] },
    ]);
    assert.deepEqual(hits(fromUsage, "alternative-added"), { initech: 9 });
  });

  test("a member removed inside an alternative names who sent it", () => {
    const review = reviewChoices(
      (d) => {
        delete d.components.schemas.ImportedPet.properties.registryId;
        d.components.schemas.ImportedPet.required = ["registry"];
      },
      [row("importer", 40, ["/registry", "/registryId"]), row("shop", 12, ["/name", "/categoryId"])],
    );
    assert.deepEqual(hits(review, "member-removed", "request body application/json"), { importer: 40 });
  });
});

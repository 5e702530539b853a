// `npm run plan -- --against`: the change review as CI runs it, a process of its own whose exit
// code is the gate (0 nothing used breaks, 1 something used breaks or breaks unseen, 2 a
// candidate or a log that cannot be read), on the bundled document and config.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { DEFAULT_OPENAPI_FILE, PROJECT_ROOT } from "../../src/project-files.ts";
import { OWN_DOCUMENT, writeDocumentFiles } from "../support/openapi-documents.ts";
import { type ProgramRun, runProgram } from "../support/processes.ts";

const LOGS = join(PROJECT_ROOT, "test/fixtures/change-review/access.log");
const NOW = "2026-11-25T00:00:00Z";

// biome-ignore lint/suspicious/noExplicitAny: a parsed document, edited in place
type Document = Record<string, any>;

/** The bundled document as `change` edits it, in a file of its own. */
function candidate(change: (document: Document) => void): string {
  const document = JSON.parse(readFileSync(DEFAULT_OPENAPI_FILE, "utf8"));
  change(document);
  return join(writeDocumentFiles({ "candidate.json": document }), "candidate.json");
}

const review = (args: readonly string[], stdin?: string) =>
  runProgram(["scripts/plan.ts", "--now", NOW, "--days", "7", ...args], stdin === undefined ? {} : { stdin });

// Used: acme sent status=sold twice in the week.
const soldRemoved = candidate((d) => {
  d.paths["/pets"].get.parameters[1].schema = { type: "string", enum: ["available", "pending"] };
});
// Unused: nobody received getPet's 401 in the week.
const unauthorizedRemoved = candidate((d) => delete d.paths["/pets/{petId}"].get.responses["401"]);

// Each test is a process of its own on files of its own: they run side by side.
describe("npm run plan -- --against: the exit code is the gate", { concurrency: true }, () => {
  test("a breaking change some consumer used exits 1 and names it", async () => {
    const { code, stdout, stderr } = await review(["--against", soldRemoved, "--logs", LOGS]);
    assert.equal(code, 1, stderr);
    assert.match(
      stdout,
      /query parameter status: the value "sold" is removed \[request\]\n {6}acme: 2 calls, last 1 day ago/,
    );
  });

  test("a breaking change nobody used in the window exits 0 and says so", async () => {
    const { code, stdout, stderr } = await review(["--against", unauthorizedRemoved, "--logs", LOGS]);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /no longer answers 401 \[response\]\n {6}no consumer used this in 7 days/);
  });

  test("a breaking change without --logs exits 1: nobody can say it is unused", async () => {
    const { code, stdout } = await review(["--against", unauthorizedRemoved]);
    assert.equal(code, 1);
    assert.match(stdout, /who: unknown \(no logs given\)/);
  });

  test("the logs may come on stdin (-), as from kubectl logs", async () => {
    const { code, stdout, stderr } = await review(
      ["--against", soldRemoved, "--logs", "-", "--format", "markdown"],
      readFileSync(LOGS, "utf8"),
    );
    assert.equal(code, 1, stderr);
    assert.match(stdout, /^### Change review: /);
    assert.match(stdout, /\| request \| acme: 2 calls, last 1 day ago \|/);
  });

  test("the same document with nothing breaking exits 0", async () => {
    const { code, stdout, stderr } = await review(["--against", DEFAULT_OPENAPI_FILE, "--format", "json"]);
    assert.equal(code, 0, stderr);
    assert.deepEqual(JSON.parse(stdout).changes, []);
  });

  test("a candidate that is not an OpenAPI description exits 2 with the loader's one line", async () => {
    const bad = join(
      writeDocumentFiles({ "candidate.json": { openapi: "2.0", paths: {} } }),
      "candidate.json",
    );
    const { code, stdout, stderr } = await review(["--against", bad, "--logs", LOGS]);
    assert.equal(code, 2);
    assert.equal(stdout, "");
    assert.match(
      stderr,
      /^plan: OpenAPI description .*candidate\.json: "openapi" must be a 3\.0\.x or 3\.1\.x version\n$/,
    );
  });

  test("a log file that cannot be read exits 2, never a verdict", async () => {
    const { code, stdout, stderr } = await review([
      "--against",
      soldRemoved,
      "--logs",
      join(PROJECT_ROOT, "no-such.log"),
    ]);
    assert.equal(code, 2);
    assert.equal(stdout, "");
    assert.match(stderr, /^plan: cannot read the logs .*no-such\.log: /);
  });
});

describe("npm run plan -- --against, with the running config", () => {
  test("a sunset the config gives, moved earlier by the candidate's document, names who calls the operation", async () => {
    // The team's own document marks getPet deprecated and leaves its dates to the config.
    const own = JSON.parse(readFileSync(OWN_DOCUMENT, "utf8"));
    const moved = structuredClone(own);
    moved.paths["/pets/{petId}"].get["x-gateway-deprecation"] = { sunset: "2029-01-01T00:00:00Z" };
    const folder = writeDocumentFiles({ "openapi.json": own, "candidate.json": moved });
    const config = join(folder, "gateway.json");
    writeFileSync(
      config,
      JSON.stringify({
        openapi: join(folder, "openapi.json"),
        policies: { lifecycle: { operations: { getPet: { sunset: "2030-12-05T00:00:00Z" } } } },
      }),
    );
    const { code, stdout, stderr } = await review([
      "--config",
      config,
      "--against",
      join(folder, "candidate.json"),
      "--logs",
      LOGS,
    ]);
    assert.equal(code, 1, stderr);
    assert.match(
      stdout,
      /getPet \(GET \/pets\/\{petId\}\): the sunset moves earlier: 2029-01-01T00:00:00\.000Z in x-gateway-deprecation\.sunset \(was 2030-12-05T00:00:00\.000Z in policies\.lifecycle\.operations\.getPet\.sunset\) \[request\]\n {6}initech: 2 calls, last 1 day ago/,
    );
  });
});

/**
 * A week of access lines as a fleet writes them (every call at a time of its own): acme filters
 * by sold, globex by pending, initech still reads the deprecated getPet, and an importer creates.
 */
function weekOfLogs(): string {
  const end = Date.parse(NOW);
  const lines: string[] = [];
  const calls = (consumer: string, count: number, lastAgoMs: number, line: Record<string, unknown>) => {
    for (let i = 0; i < count; i++) {
      // Spread back from the last call to six days before the end: all within the week.
      const time = new Date(
        end - lastAgoMs - i * Math.floor((6 * 86_400_000 - lastAgoMs) / count),
      ).toISOString();
      lines.push(JSON.stringify({ level: 30, time, consumer, status: 200, ...line, msg: "request" }));
    }
  };
  calls("acme", 1204, 2 * 86_400_000 + 3_600_000, {
    operation: "listPets",
    method: "GET",
    path: "/v1/pets?status=sold&limit=50",
  });
  calls("globex", 310, 5 * 3_600_000, {
    operation: "listPets",
    method: "GET",
    path: "/v1/pets?status=pending",
  });
  calls("initech", 57, 3 * 86_400_000, { operation: "getPet", method: "GET", path: "/v1/pets/7" });
  calls("batch-importer", 12, 86_400_000 + 7_200_000, {
    operation: "createPet",
    method: "POST",
    path: "/v1/pets",
    status: 201,
  });
  return `${lines.join("\n")}\n`;
}

describe("docs/plan.md", () => {
  test("shows the review's output on two realistic changes as the command prints it", async () => {
    const page = readFileSync(join(PROJECT_ROOT, "docs/plan.md"), "utf8");
    const shown = [
      ...page.matchAll(
        /```sh\nnpm run plan -- --against (\S+) --logs week\.log --days 7 --now (\S+)\n```\n\n```\n([\s\S]*?)```\n/g,
      ),
    ];
    assert.equal(shown.length, 2, "two reviews, each its command then its output");
    const logs = join(writeDocumentFiles({ "week.log": weekOfLogs() }), "week.log");
    const retireSold = candidate((d) => {
      d.components.schemas.PetStatus.enum = ["available", "pending"];
    });
    // Both reviews run at once; each is compared with its page in turn.
    const runs = await Promise.all(
      shown.map(([, against, now]) =>
        runProgram([
          "scripts/plan.ts",
          "--against",
          // retire-sold.json is the bundled document without "sold"; the other is a fixture of the project.
          against === "retire-sold.json" ? retireSold : (against as string),
          "--logs",
          logs,
          "--days",
          "7",
          "--now",
          now as string,
        ]),
      ),
    );
    for (const [index, [, , , text]] of shown.entries()) {
      const { stdout, stderr } = runs[index] as ProgramRun;
      assert.equal(stdout.replace(retireSold, "retire-sold.json"), text, stderr);
    }
  });
});

// A document's patterns and formats run on client text: whatever the document says, a request
// built against them is answered at once, and every format a document can enable does linear
// work (recheck's verdict on each regex it runs, and the time on 100,000-character texts). Here,
// not in test/, because recheck takes seconds and the times want the cores to themselves.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fullFormats } from "ajv-formats/dist/formats.js";
import { checkSync } from "recheck";
import { PROJECT_ROOT } from "../../src/project-files.ts";
import { FORMAT_INVENTORY } from "../../src/schema-formats.ts";
import { createSchemaValidator } from "../../src/schema-validator.ts";
import { type GatewayOnDemoBackend, startGateway } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { writeDocumentFiles } from "../support/openapi-documents.ts";

const NAME = "^(\\w+\\s?)*$";
const TAG = "^(a+)+$";
// The red team's bound: a hostile value answered within this, and the canary too.
const ANSWER_MS = 100;
const LONG = 100_000;

const keys = writeKeysFile(["acme"]);
const { key } = keys;
let gw: GatewayOnDemoBackend;

before(async () => {
  // The bundled document, with the red team's patterns: on the name of a public createPet's body
  // and on a query parameter of listPets.
  const document = JSON.parse(readFileSync(join(PROJECT_ROOT, "config/openapi.json"), "utf8"));
  document.components.schemas.NewPet.properties.name.pattern = NAME;
  document.paths["/pets"].post.security = [];
  document.paths["/pets"].get.parameters.push({
    name: "tag",
    in: "query",
    schema: { type: "string", pattern: TAG },
  });
  const folder = writeDocumentFiles({ "openapi.json": document });
  gw = await startGateway({
    keys,
    config: {
      openapi: join(folder, "openapi.json"),
      // Room for the 100,000-character values, in the target and in the body.
      server: { maxHeaderBytes: 4 * LONG, maxRequestBodyBytes: 4 * LONG },
    },
  });
});
after(async () => {
  await gw?.close();
});

async function timed(run: () => Promise<{ status: number }>): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const { status } = await run();
  return { status, ms: performance.now() - started };
}

test("the red team's values, at 30 and 100,000 characters, are refused within 100 ms", async () => {
  // One ordinary request each way first: the first request pays for compiling code paths.
  assert.equal((await request(`${gw.url}/pets?tag=aaa`, { key })).status, 200);
  // The demo backend wants a key of its own; the gateway refuses the hostile bodies before it, keyless.
  const created = await request(`${gw.url}/pets`, {
    method: "POST",
    body: JSON.stringify({ name: "Rex the dog", categoryId: 1 }),
    key,
  });
  assert.equal(created.status, 201, created.body);
  for (const length of [30, LONG]) {
    const name = `${"a".repeat(length - 1)}!`;
    const body = await timed(() =>
      request(`${gw.url}/pets`, { method: "POST", body: JSON.stringify({ name, categoryId: 1 }) }),
    );
    const query = await timed(() => request(`${gw.url}/pets?tag=${"a".repeat(length - 1)}!`, { key }));
    const canary = await timed(() => request(`${gw.opsUrl}/healthz`));
    assert.equal(body.status, 400, `body of ${length}`);
    assert.equal(query.status, 400, `query of ${length}`);
    assert.equal(canary.status, 200);
    for (const [what, answer] of Object.entries({ body, query, canary })) {
      assert.ok(answer.ms < ANSWER_MS, `${what} at ${length} characters: ${answer.ms.toFixed(1)} ms`);
    }
    console.log(
      `${length} characters: body ${body.ms.toFixed(1)} ms, query ${query.ms.toFixed(1)} ms, canary ${canary.ms.toFixed(1)} ms`,
    );
  }
});

/** Every native regex the formats run, with the formats that ran it, found by running each on a valid value. */
function regexesTheFormatsRun(): Map<RegExp, Set<string>> {
  const valid: Record<string, string> = {
    date: "2024-02-29",
    time: "12:00:00Z",
    "date-time": "2024-02-29T12:00:00Z",
    "iso-time": "12:00:00",
    "iso-date-time": "2024-02-29 12:00:00",
    uri: "https://example.com/a?b#c",
    regex: "^a+$",
    byte: "QUJD",
  };
  const found = new Map<RegExp, Set<string>>();
  const exec = RegExp.prototype.exec;
  let current = "";
  RegExp.prototype.exec = function (this: RegExp, text: string) {
    // split() runs a copy made with the y flag: judge the regex as written.
    const key = [...found.keys()].find((re) => re.source === this.source) ?? this;
    found.set(key, (found.get(key) ?? new Set()).add(current));
    return exec.call(this, text);
  };
  try {
    for (const [name, format] of Object.entries(fullFormats)) {
      current = name;
      const validate = typeof format === "object" && !(format instanceof RegExp) ? format.validate : format;
      if (validate instanceof RegExp) found.set(validate, (found.get(validate) ?? new Set()).add(name));
      else if (typeof validate === "function" && valid[name] !== undefined) {
        assert.equal((validate as (text: string) => boolean)(valid[name]), true, name);
      }
    }
  } finally {
    RegExp.prototype.exec = exec;
  }
  return found;
}

test("recheck judges every regex the enabled formats run safe, but ajv-formats' url, which is replaced", () => {
  const verdicts: string[] = [];
  const unsafe: string[] = [];
  for (const [regex, formats] of regexesTheFormatsRun()) {
    const diagnostics = checkSync(regex.source, regex.flags);
    const verdict =
      diagnostics.status === "vulnerable"
        ? `${diagnostics.complexity.summary}, e.g. ${diagnostics.attack.pattern}`
        : diagnostics.status === "unknown"
          ? `unknown (${diagnostics.error.kind})`
          : diagnostics.complexity.summary;
    verdicts.push(`${[...formats].join(", ")}: ${verdict}`);
    if (diagnostics.status !== "safe") unsafe.push(...formats);
  }
  console.log(verdicts.join("\n"));
  // "unknown" counts as unsafe: only url is, and url no longer runs this regex.
  assert.deepEqual(unsafe, ["url"]);
  assert.match(FORMAT_INVENTORY.url as string, /linear engine/);
  // Every format that runs a regex on text was seen running it (a format that only compiles the
  // text, regex, and the number formats run none of their own beyond what is listed).
  const seen = new Set([...regexesTheFormatsRun().values()].flatMap((formats) => [...formats]));
  for (const [format, why] of Object.entries(FORMAT_INVENTORY)) {
    if (/regex/.test(why) && format !== "regex") assert.ok(seen.has(format), `${format} ran a regex`);
  }
});

// Texts built against the formats' regexes: long runs of what each accepts, then a refusal.
const HOSTILE: Readonly<Record<string, (length: number) => string>> = {
  "letters then !": (length) => `${"a".repeat(length - 1)}!`,
  "digits then !": (length) => `${"1".repeat(length - 1)}!`,
  "url of colons": (length) => `http://${":".repeat(length - 8)}\u0000`,
  "recheck's url attack": (length) =>
    `ftp://172.30.3.56${"4.1.6.7:155".repeat(length / 11)}\u0000`.slice(0, length),
  "at signs": (length) => `http://${"a@".repeat(length / 2)}`.slice(0, length),
  "labels and dashes": (length) => `${"a-".repeat(length / 2)}`.slice(0, length),
  "dotted labels": (length) => `${"a.".repeat(length / 2)}!`.slice(0, length),
  "pointer pieces": (length) => `/${"~0/".repeat(length / 3)}~`.slice(0, length),
  "percent pieces": (length) => `#${"/%4".repeat(length / 3)}`.slice(0, length),
  "base64 then =": (length) => `${"QUJD".repeat(length / 4)}=`,
  "hex and colons": (length) => `${"1:".repeat(length / 2)}`.slice(0, length),
  "open groups": (length) => "(".repeat(length),
  "nested quantifiers": (length) => "(a+)+".repeat(length / 5),
  "date then digits": (length) => `2024-02-29T12:00:00.${"1".repeat(length - 21)}`,
  "duration pieces": (length) => `P${"1Y".repeat(length / 2)}`.slice(0, length),
};

test("every enabled format's work grows linearly: 10 times the text takes well under 100 times as long", () => {
  const ajv = createSchemaValidator({ draft: "2020-12" });
  // The best of three runs, so that a collection or a neighbour's burst does not count as the format's.
  const best = (validate: (text: string) => unknown, text: string) => {
    let fastest = Number.POSITIVE_INFINITY;
    for (let run = 0; run < 3; run++) {
      const started = performance.now();
      validate(text);
      fastest = Math.min(fastest, performance.now() - started);
    }
    return fastest;
  };
  const slowest: string[] = [];
  for (const format of Object.keys(FORMAT_INVENTORY)) {
    const validate = ajv.compile({ type: "string", format });
    for (const [name, make] of Object.entries(HOSTILE)) {
      const short = best(validate, make(LONG / 10));
      const long = best(validate, make(LONG));
      // Linear is 10 times as long, quadratic 100; 2 ms for timings too small to divide.
      assert.ok(
        long < 25 * short + 2,
        `${format} on ${name}: ${short.toFixed(2)} ms, then ${long.toFixed(2)} ms`,
      );
      assert.ok(long < ANSWER_MS * 10, `${format} on ${name}: ${long.toFixed(1)} ms at ${LONG} characters`);
      if (long > 5) slowest.push(`${format} on ${name}: ${short.toFixed(1)} ms, then ${long.toFixed(1)} ms`);
    }
  }
  console.log(slowest.length === 0 ? "every format under 5 ms" : slowest.join("\n"));
});

// What a document's pattern costs per match on the linear engine (re2js), against V8's engine on
// the same patterns where V8 is safe, in this process: the bench's `patterns` scenario measures
// the whole request; this measures the engine alone. Prints markdown.
//
//   node scripts/bench/pattern-cost.ts
import { linearRegExp } from "../../src/linear-regexp.ts";
import { linearUrlFormat } from "../../src/schema-formats.ts";
import { createSchemaValidator } from "../../src/schema-validator.ts";

const CASES: readonly { pattern: string; text: string }[] = [
  { pattern: "^[a-z]{1,32}$", text: "doggie" },
  { pattern: "^(\\w+\\s?)*$", text: "Rex the dog" },
  { pattern: "^[A-Z][a-z]+(?: [A-Z][a-z]+)*$", text: "Rex The Dog" },
  { pattern: "^\\d{3}-\\d{4}$", text: "555-1234" },
  { pattern: "^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$", text: "rex@example.com" },
  { pattern: "^(\\w+\\s?)*$", text: `${"word ".repeat(200)}` },
];

function microseconds(run: () => unknown, seconds = 0.3): number {
  for (let i = 0; i < 2000; i++) run();
  let calls = 0;
  const started = performance.now();
  while (performance.now() - started < seconds * 1000) {
    for (let i = 0; i < 1000; i++) run();
    calls += 1000;
  }
  return ((performance.now() - started) * 1000) / calls;
}

const lines = ["| pattern | text length | re2js µs/match | V8 µs/match |", "| --- | ---: | ---: | ---: |"];
for (const { pattern, text } of CASES) {
  const linear = linearRegExp(pattern);
  const native = new RegExp(pattern, "u");
  lines.push(
    `| \`${pattern}\` | ${text.length} | ${microseconds(() => linear.test(text)).toFixed(3)} | ${microseconds(() => native.test(text)).toFixed(3)} |`,
  );
}

// A whole body check, as createPet's would be, with and without a pattern on the name.
const body = { name: "Rex the dog", categoryId: 1, status: "available" };
const schema = (withPattern: boolean) => ({
  type: "object",
  required: ["name", "categoryId"],
  additionalProperties: false,
  properties: {
    name: withPattern ? { type: "string", pattern: "^(\\w+\\s?)*$" } : { type: "string" },
    categoryId: { type: "integer" },
    status: { enum: ["available", "pending", "sold"] },
  },
});
const ajv = createSchemaValidator({ draft: "2020-12" });
const plain = ajv.compile(schema(false));
const patterned = ajv.compile(schema(true));
lines.push(
  "",
  "| body check (createPet's shape) | µs/validation |",
  "| --- | ---: |",
  `| no pattern | ${microseconds(() => plain(body)).toFixed(3)} |`,
  `| name with \`^(\\w+\\s?)*$\` | ${microseconds(() => patterned(body)).toFixed(3)} |`,
);

const url = linearUrlFormat();
lines.push(
  "",
  "| url format | µs/check |",
  "| --- | ---: |",
  `| https://example.com/pets?limit=20 | ${microseconds(() => url("https://example.com/pets?limit=20")).toFixed(3)} |`,
);
process.stdout.write(`${lines.join("\n")}\n`);

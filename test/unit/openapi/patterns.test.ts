// A document's patterns are the team's text, run on the clients' and the backend's: none of them
// may run on V8's backtracking engine, and one the linear engine cannot run stops the gateway (and
// the plan) naming where it is.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import policies from "../../../policies/index.ts";
import { planForCommand } from "../../../src/plan.ts";
import { ApiDescriptionError } from "../../../src/startup-errors.ts";
import { boundedConfigFile } from "../../support/config-file.ts";
import { loadDocument, minimalDocument, writeDocumentFiles } from "../../support/openapi-documents.ts";

const NAME = "^(\\w+\\s?)*$";
const TAG = "^(a+)+$";
const CODE = "^[a-z]{1,32}$";
const EXTRA = "^x-[a-z]+$";
const LABEL = "^[A-Z]";
const PET_ID = "^[1-9][0-9]*$";
const KIND = "^(cat|dog)$";
const DOCUMENT_PATTERNS = new Set([NAME, TAG, CODE, EXTRA, LABEL, PET_ID, KIND]);

/** Every place a pattern can sit: a query and a path parameter, body members, names, the answer. */
function documentWithPatterns(): Record<string, unknown> {
  const document = minimalDocument({
    body: { $ref: "#/components/schemas/NewPet" },
    answer: {
      type: "object",
      properties: { kind: { type: "string", pattern: KIND } },
    },
    petIdSchema: { type: "string", pattern: PET_ID },
    schemas: {
      NewPet: {
        type: "object",
        properties: {
          name: { type: "string", pattern: NAME },
          code: { type: "string", pattern: CODE },
          // A property that also matches a patternProperties pattern: ajv's strict check of this
          // ran the pattern on V8's engine at load.
          "x-a": { type: "string" },
          labels: { type: "object", propertyNames: { pattern: LABEL } },
        },
        patternProperties: { [EXTRA]: { type: "string", maxLength: 3 } },
      },
    },
  }) as { paths: Record<string, Record<string, { parameters?: unknown[] }>> };
  const getPet = document.paths["/pets/{petId}"]?.get;
  getPet?.parameters?.push({ name: "tag", in: "query", schema: { type: "string", pattern: TAG } });
  return document;
}

test("no pattern of the document runs on V8's backtracking engine, at load or on a value", (t) => {
  const ran: string[] = [];
  const exec = RegExp.prototype.exec;
  // RegExp.prototype.test, match, replace, split and search all call exec (ECMA-262 RegExpExec).
  t.mock.method(RegExp.prototype, "exec", function (this: RegExp, text: string) {
    if (DOCUMENT_PATTERNS.has(this.source)) ran.push(`/${this.source}/ on ${JSON.stringify(text)}`);
    return exec.call(this, text);
  });
  const api = loadDocument(documentWithPatterns());
  const createPet = api.operation("createPet");
  const getPet = api.operation("getPet");
  const validateBody = createPet?.requestBody?.validate;
  const validateAnswer = createPet?.responses.get("201")?.validate;
  const validatePetId = getPet?.pathParameters[0]?.validate;
  const validateTag = getPet?.queryParameters.get("tag")?.validate;
  assert.ok(validateBody && validateAnswer && validatePetId && validateTag);

  // Each pattern is enforced, both ways: the linear engine runs it.
  assert.equal(validateBody({ name: "Rex the dog", code: "rex" }), true);
  assert.equal(validateBody({ name: "Rex!" }), false);
  assert.equal(validateBody({ code: "REX" }), false);
  assert.equal(validateBody({ "x-b": "ok" }), true);
  assert.equal(validateBody({ "x-b": "too long" }), false);
  assert.equal(validateBody({ "x-a": "too long" }), false, "x-a matches the pattern too: both apply");
  assert.equal(validateBody({ labels: { Big: 1 } }), true);
  assert.equal(validateBody({ labels: { small: 1 } }), false);
  assert.equal(validateAnswer({ kind: "cat" }), true);
  assert.equal(validateAnswer({ kind: "cow" }), false);
  assert.equal(validatePetId("12"), true);
  assert.equal(validatePetId("012"), false);
  assert.equal(validateTag("aaaa"), true);
  assert.deepEqual(ran, []);
  // The red team's values: answered at once, by the linear engine (V8's took 4 to 31 s).
  assert.equal(validateTag(`${"a".repeat(29)}!`), false);
  assert.equal(validateBody({ name: `${"a".repeat(28)}!` }), false);
  assert.deepEqual(ran, []);
  // The spy sees what it should: a native run of a document pattern is caught.
  new RegExp(KIND, "u").test("cat");
  assert.equal(ran.length, 1);
});

test("a pattern the linear engine cannot run stops loading, naming its place and why", () => {
  const document = minimalDocument({
    body: { $ref: "#/components/schemas/NewPet" },
    schemas: {
      NewPet: {
        type: "object",
        properties: { name: { type: "string", pattern: "^(?!admin)[a-z]+$" } },
      },
    },
  });
  assert.throws(
    () => loadDocument(document),
    (error) =>
      error instanceof ApiDescriptionError &&
      error.message.includes(
        'paths./pets.post.requestBody.content.application/json: the pattern "^(?!admin)[a-z]+$" at #/components/schemas/NewPet/properties/name/pattern is refused: a negative lookahead (?!...) has no linear-time match',
      ),
  );
  const backreference = minimalDocument({
    body: { type: "object", patternProperties: { "^(a)\\1$": { type: "string" } } },
  });
  assert.throws(
    () => loadDocument(backreference),
    /the pattern "\^\(a\)\\\\1\$" at #\/paths\/~1pets\/post\/requestBody\/content\/application~1json\/schema\/patternProperties\/\^\(a\)\\1\$ is refused: a backreference/,
  );
});

test("npm run plan refuses the same pattern with the same line as start-up", () => {
  const document = minimalDocument({ petIdSchema: { type: "string", pattern: "(?<=x)1" } });
  const folder = writeDocumentFiles({ "openapi.json": document });
  const openapi = join(folder, "openapi.json");
  const config = boundedConfigFile({ upstream: { url: "http://127.0.0.1:9/v1" } });
  assert.throws(
    () => planForCommand(policies, { file: config, openapi }, () => 0),
    (error) =>
      error instanceof ApiDescriptionError &&
      error.message ===
        `OpenAPI description ${openapi}: paths./pets/{petId}.get.parameters.petId.schema: the pattern "(?<=x)1" at #/paths/~1pets~1{petId}/get/parameters/0/schema/pattern is refused: a lookbehind (?<=...) has no linear-time match (RE2 has no lookaround)`,
  );
});

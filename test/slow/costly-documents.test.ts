// Documents that cost more than their bytes say, refused before they are compiled: 99 YAML aliases
// of a 1.3 MB schema (before: not done after 11 min 48 s, 3.5 GB) and 17,000 plain operations
// (before: 8.0 s and 842 MB, accepted). Timed in CPU, which the other processes of a shared
// machine inflate less than the wall time, reported beside it. Each budget is about three times
// what the refusal costs on a quiet 2-core machine, far below what the document cost before: the
// aliases' refusal is mostly the YAML parse of 1.3 MB (1.6-1.8 s of CPU, every thread of the
// process; 2.2 s once on a busy CI machine, over the 2 s this test used to allow).
import assert from "node:assert/strict";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import { loadApiDescription } from "../../src/openapi.ts";
import { ApiDescriptionError } from "../../src/startup-errors.ts";
import { aliasedSchemaYaml, manyOperationsDocument } from "../support/costly-documents.ts";
import { writeDocumentFiles } from "../support/openapi-documents.ts";

/** Loads the document, which must be refused within `budgetMs` of CPU; returns the one-line message. */
function refusedQuickly(t: TestContext, file: string, budgetMs: number): string {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  let message = "";
  assert.throws(
    () => loadApiDescription(file),
    (error) => {
      assert.ok(error instanceof ApiDescriptionError);
      message = error.message;
      return true;
    },
  );
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000;
  t.diagnostic(
    `refused in ${Math.round(cpuMs)} ms of CPU, ${Math.round(performance.now() - wall)} ms of wall time`,
  );
  assert.ok(cpuMs < budgetMs, `${Math.round(cpuMs)} ms of CPU, over ${budgetMs}`);
  assert.doesNotMatch(message, /\n/);
  return message;
}

test("a 1.3 MB YAML document of 99 aliases to one large schema is refused within 6 s, saying why", (t) => {
  const text = aliasedSchemaYaml({ aliases: 99, bytes: 1.3e6 });
  assert.ok(text.length >= 1.3e6);
  const folder = writeDocumentFiles({ "openapi.yaml": text });
  assert.match(
    refusedQuickly(t, join(folder, "openapi.yaml"), 6000),
    /openapi\.yaml: the file holds more than 1000000 values with its YAML aliases and \$refs expanded: each alias counts as a copy of what it names$/,
  );
});

test("a document of 17,000 plain operations is refused within 1 s, naming the bound", (t) => {
  const folder = writeDocumentFiles({ "openapi.json": JSON.stringify(manyOperationsDocument(17_000)) });
  assert.match(
    refusedQuickly(t, join(folder, "openapi.json"), 1000),
    /openapi\.json: the document has 17000 operations, more than the 2000 the gateway compiles at most$/,
  );
});

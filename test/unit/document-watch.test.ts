// The watch that notices the document changed: the folders of every path it was read through,
// debounced into one reload, re-aimed after each read, and never a reason to stop serving.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pino } from "pino";
import { watchDocumentFiles } from "../../src/document-watch.ts";
import { eventually } from "../support/eventually.ts";
import { LogCapture } from "../support/log-capture.ts";

function setUp(debounceMs = 50) {
  const logs = new LogCapture();
  const calls: string[] = [];
  const watch = watchDocumentFiles({
    debounceMs,
    onChange: (why) => calls.push(why),
    logger: pino(logs),
  });
  return { logs, calls, watch };
}

const folder = () => mkdtempSync(join(tmpdir(), "document-watch-"));

test("a burst of writes in a watched folder makes one reload, once the folder is quiet", async (t) => {
  const { calls, watch } = setUp(200);
  t.after(() => watch.close());
  const a = folder();
  watch.watch([join(a, "openapi.json")]);
  for (const text of ["1", "2", "3"]) writeFileSync(join(a, "openapi.json"), text);
  await eventually("the reload is asked for", () => calls.length > 0);
  assert.deepEqual(calls, ["file changed"]);
});

test("after a read names other files, their folder is the one watched", async (t) => {
  const { calls, watch } = setUp();
  t.after(() => watch.close());
  const a = folder();
  const b = folder();
  watch.watch([join(a, "openapi.json")]);
  watch.watch([join(b, "openapi.json"), join(b, "schemas.json")]);
  writeFileSync(join(b, "schemas.json"), "{}");
  await eventually("a change in the new folder asks for a reload", () => calls.length > 0);
});

test("a folder that cannot be watched is logged, and the gateway reloads on SIGHUP only", (t) => {
  const { logs, watch } = setUp();
  t.after(() => watch.close());
  const gone = join(folder(), "no-such-folder");
  watch.watch([join(gone, "openapi.json")]);
  const line = logs.messages("cannot watch the document's folder; it reloads on SIGHUP only")[0];
  assert.equal(line?.folder, gone);
});

test("a closed watch watches nothing more (a process shutting down)", () => {
  const { logs, watch } = setUp();
  watch.close();
  watch.watch([join(folder(), "no-such-folder", "openapi.json")]);
  assert.equal(logs.lines.length, 0, "not even tried");
});

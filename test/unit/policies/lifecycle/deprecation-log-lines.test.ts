import assert from "node:assert/strict";
import { test } from "node:test";
import {
  DailyCalls,
  LogSpan,
  lineTime,
  recordLogLine,
} from "../../../../policies/lifecycle/deprecation-log-lines.ts";
import { CallerTally } from "../../../../policies/lifecycle/deprecation-report.ts";

test("lines that are not deprecated-call lines are skipped by the log reader", () => {
  const tally = new CallerTally();
  assert.equal(recordLogLine(tally, '{"msg":"request","operation":"getPet","consumer":"acme"}'), undefined);
  assert.equal(recordLogLine(tally, "deprecated call {broken"), undefined);
  assert.equal(
    recordLogLine(tally, '{"msg":"deprecated call","operation":"getPet","consumer":"acme","calledAt":"x"}'),
    undefined,
  );
  assert.equal(
    recordLogLine(
      tally,
      '{"msg":"deprecated call","operation":"getPet","consumer":"acme","calledAt":"2030-01-01T00:00:00Z"}',
    ),
    Date.parse("2030-01-01T00:00:00Z"),
  );
});

test("a line's own time is pino's, after a collector's prefix; a client's text cannot forge it", () => {
  const at = Date.parse("2028-11-20T12:00:00.123Z");
  assert.equal(lineTime('{"level":"info","time":"2028-11-20T12:00:00.123Z","pid":1,"msg":"request"}'), at);
  assert.equal(lineTime('pod/gw-1 "time":"2001-01-01T00:00:00Z" {"time":"2028-11-20T12:00:00.123Z"}'), at);
  // A quote inside a JSON string is escaped: a user agent that says "time" is no time key.
  assert.equal(lineTime('{"level":"info","userAgent":"\\"time\\":\\"2040-01-01T00:00:00Z\\""}'), undefined);
  assert.equal(lineTime('{"time":"yesterday"}'), undefined);
  assert.equal(lineTime('{"time":"2028-11-20T12:00:00.123Z and then a great deal more text"}'), undefined);
  assert.equal(lineTime("no json here"), undefined);
});

test("the logs' span is their first and last instant, whatever the order of the lines", () => {
  const span = new LogSpan();
  assert.equal(span.view(), undefined);
  for (const iso of ["2028-11-02T00:00:00Z", "2028-10-01T00:00:00Z", "2028-11-20T12:00:00Z"]) {
    span.see(Date.parse(iso));
  }
  assert.deepEqual(span.view(), { from: "2028-10-01T00:00:00.000Z", to: "2028-11-20T12:00:00.000Z" });
});

test("the day bars end at the logs' last day, not at --now, with lines in any order", () => {
  // --now is two years after the logs end; the last line read is the oldest.
  const daily = new DailyCalls(Date.parse("2030-11-20T12:00:00Z"));
  daily.record("getPet", "acme", Date.parse("2028-10-25T09:00:00Z"));
  daily.record("getPet", "acme", Date.parse("2028-11-19T09:00:00Z"));
  // Inside the 30 days to 2028-11-19 when it is read; outside the final ones (2028-10-22 to 2028-11-20).
  daily.record("getPet", "globex", Date.parse("2028-10-21T09:00:00Z"));
  daily.see(Date.parse("2028-11-20T23:00:00Z"));
  daily.record("getPet", "acme", Date.parse("2028-10-22T09:00:00Z"));
  const view = daily.view();
  assert.equal(view.firstDay, "2028-10-22");
  assert.equal(view.lastDay, "2028-11-20");
  const acme = view.counts.get("getPet")?.get("acme") ?? [];
  assert.equal(acme.length, 30);
  assert.deepEqual(
    acme.flatMap((calls, day) => (calls === 0 ? [] : [[day, calls]])),
    [
      [0, 1],
      [3, 1],
      [28, 1],
    ],
  );
  assert.deepEqual(view.counts.get("getPet")?.get("globex"), new Array(30).fill(0));
});

test("without any dated line the day bars end at --now's day", () => {
  assert.deepEqual(new DailyCalls(Date.parse("2030-11-20T12:00:00Z")).view().lastDay, "2030-11-20");
});

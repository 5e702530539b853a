// The API owner's page, from a real gateway: the log command's fleet-wide file and the ops port's
// page say what the JSON reports say, figure for figure, and hostile text stays text.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { parseHTML } from "linkedom";
import type { DeprecationReport } from "../policies/lifecycle/deprecation-report.ts";
import type { ContractReport } from "../policies/response-contract/index.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "./fixtures/programmable-backend.ts";
import {
  contractBrokenForPet13,
  deprecatedCaller,
  jsonFigures,
  pageFigures,
  runReportCommand,
} from "./support/deprecation-page.ts";
import { startGateway, type TestGateway } from "./support/gateway.ts";
import { request } from "./support/http.ts";
import { writeKeysFile } from "./support/keys.ts";

const keys = writeKeysFile(["acme", "globex", "initech", "umbrella"]);
const { keyOf } = keys;
const HOSTILE_AGENT = `<script>alert("ua")</script> & 'quoted' "x"`;
const HOSTILE_VALUE = `<script>alert('x')</script> & "q"`;
// What Chromium sends for a page it navigates to.
const BROWSER_ACCEPT =
  "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
const at = (iso: string) => Date.parse(iso);
const STARTED = at("2030-10-01T00:00:00Z");
const NOW = at("2030-11-20T12:00:00Z");

describe("the deprecation page from a real gateway's log lines and ops port", () => {
  let backend: ProgrammableBackend;
  let gw: TestGateway;
  let clock = STARTED;
  let report: DeprecationReport;
  let violations: ContractReport;
  let fleetHtml: string;

  before(async () => {
    backend = await startProgrammableBackend();
    // Inside the contract, but for animal 13, whose category is a string: one violation.
    backend.behave(contractBrokenForPet13(HOSTILE_VALUE));
    gw = await startGateway({
      upstreamUrl: backend.url,
      keys,
      now: () => clock,
    });
    const call = deprecatedCaller(
      () => gw.url,
      keyOf,
      (iso) => {
        clock = at(iso);
      },
    );
    // umbrella called once, before the 30 days the bars show; globex stopped 20 days ago: both
    // quiet (no call in the last 14 days). acme and initech still call.
    await call("umbrella", "2030-10-05T09:00:00Z", "umbrella-batch/0.9");
    await call("globex", "2030-10-28T09:00:00Z", "globex/2");
    await call("globex", "2030-10-31T12:00:00Z", "globex/2.1");
    await call("acme", "2030-11-10T10:00:00Z", "acme-sync/1.0");
    await call("acme", "2030-11-18T10:00:00Z", "acme-sync/1.0");
    await call("acme", "2030-11-19T09:00:00Z", "acme-sync/1.1", 13);
    await call("initech", "2030-11-19T15:00:00Z", HOSTILE_AGENT);
    await call("initech", "2030-11-20T11:00:00Z", HOSTILE_AGENT);
    // A client that pasted its own key into its User-Agent.
    await call("acme", "2030-11-20T10:00:00Z", `acme-sync/1.1 ${keyOf("acme")}`);
    clock = NOW;
    report = (await request(`${gw.opsUrl}/deprecations`)).json<DeprecationReport>();
    violations = (await request(`${gw.opsUrl}/contract/violations`)).json<ContractReport>();
    const page = await runReportCommand(
      ["--format", "html", "--now", new Date(NOW).toISOString()],
      gw.logs.raw,
    );
    assert.equal(page.code, 0, page.stderr);
    fleetHtml = page.stdout;
  });
  after(async () => {
    await gw.close();
    await backend.close();
  });

  test("the log command's page shows the JSON report's figures, quiet consumers apart", () => {
    assert.deepEqual(pageFigures(fleetHtml), jsonFigures(report));
    const [getPet] = pageFigures(fleetHtml);
    assert.deepEqual(
      getPet?.callers.map((row) => row.consumer),
      ["initech", "acme", "globex", "umbrella"],
    );
    assert.equal(getPet?.quiet, 2);
    assert.equal(getPet?.daysToSunset, 15);
    const { document } = parseHTML(fleetHtml);
    assert.deepEqual(
      [...document.querySelectorAll("table.quiet .name")].map((name) => name.textContent),
      ["globex", "umbrella"],
    );
    assert.deepEqual(
      [...document.querySelectorAll("table.quiet .badge")].map((badge) => badge.textContent),
      ["quiet since 2030-10-31", "quiet since 2030-10-05"],
    );
    assert.ok(
      !/migrated/i.test(document.querySelector("main")?.textContent ?? ""),
      "a consumer called migrated",
    );
    assert.match(
      document.querySelector(".scope")?.textContent ?? "",
      /^Fleet-wide, from every replica's logs: \d+ log lines from .+ UTC to 2030-11-20 11:00 UTC; calls from 2030-10-05 09:00 UTC to 2030-11-20 11:00 UTC\.$/,
    );
  });

  test("the day bars add up to each consumer's calls of the last 30 days, from calledAt", () => {
    const { document } = parseHTML(fleetHtml);
    const drawn = Object.fromEntries(
      [...document.querySelectorAll("table.calling tbody tr, table.quiet tbody tr")].map((row) => [
        row.querySelector(".name")?.textContent,
        [...row.querySelectorAll("svg.daily rect.bar")].map((bar) => [
          bar.getAttribute("data-day"),
          Number(bar.getAttribute("data-calls")),
        ]),
      ]),
    );
    assert.deepEqual(drawn, {
      initech: [
        ["2030-11-19", 1],
        ["2030-11-20", 1],
      ],
      acme: [
        ["2030-11-10", 1],
        ["2030-11-18", 1],
        ["2030-11-19", 1],
        ["2030-11-20", 1],
      ],
      globex: [
        ["2030-10-28", 1],
        ["2030-10-31", 1],
      ],
      // Its one call is older than the bars: in the figures, not drawn.
      umbrella: [],
    });
  });

  test("contract violations by operation and rule match /contract/violations, with the recent excerpt", () => {
    const { document } = parseHTML(fleetHtml);
    const byRule = [...document.querySelectorAll("table.violations-by-rule tbody tr")].map((row) =>
      [...row.querySelectorAll("th, td")].map((cell) => cell.textContent),
    );
    const expected = Object.entries(violations.operations)
      .filter(([, drift]) => drift.violations > 0)
      .flatMap(([operation, drift]) =>
        Object.entries(drift.byRule).map(([rule, count]) => [operation, rule, String(count)]),
      );
    assert.deepEqual(byRule, expected);
    assert.deepEqual(byRule, [["getPet", "schema:type", "1"]]);
    const recent = document.querySelector("table.violations-recent tbody tr");
    const drift = violations.operations.getPet?.recent[0];
    assert.equal(recent?.querySelector("time")?.getAttribute("datetime"), drift?.lastSeen);
    assert.equal(drift?.lastSeen, "2030-11-19T09:00:00.000Z");
    assert.equal(recent?.querySelector("td.excerpt")?.textContent, drift?.last.excerpt);
  });

  test("hostile user agents and excerpts are text on the page, and a key in a user agent is redacted", () => {
    const { document } = parseHTML(fleetHtml);
    assert.equal(document.querySelectorAll("script").length, 0);
    const agents = [...document.querySelectorAll("td.agent")].map((cell) => cell.textContent);
    assert.equal(agents[0], HOSTILE_AGENT);
    assert.equal(agents[1], "acme-sync/1.1 [redacted]");
    assert.ok(document.querySelector("td.excerpt")?.textContent?.includes(HOSTILE_VALUE.slice(0, 20)));
    assert.ok(!fleetHtml.includes(keyOf("acme")), "a key reached the page");
    assert.ok(!fleetHtml.includes("<script"), "a script tag reached the page");
  });

  test("the ops port serves its own report as the page: one replica, since it started, same figures", async () => {
    const answer = await request(`${gw.opsUrl}/deprecations?format=html`);
    assert.equal(answer.status, 200);
    assert.equal(answer.headers["content-type"], "text/html; charset=utf-8");
    assert.equal(answer.headers["cache-control"], "no-store");
    const { document } = parseHTML(answer.body);
    const hash = createHash("sha256")
      .update(document.querySelector("style")?.textContent ?? "")
      .digest("base64");
    assert.equal(
      answer.headers["content-security-policy"],
      `default-src 'none'; style-src 'sha256-${hash}'; img-src data:`,
    );
    assert.deepEqual(pageFigures(answer.body), jsonFigures(report));
    assert.equal(report.countingSince, new Date(STARTED).toISOString());
    assert.equal(
      document.querySelector(".scope time")?.getAttribute("datetime"),
      new Date(STARTED).toISOString(),
    );
    assert.match(
      document.querySelector(".scope")?.textContent ?? "",
      /^This replica only, since 2030-10-01 00:00 UTC/,
    );
    // No history per day in memory: each consumer's share of the calls instead.
    assert.equal(document.querySelectorAll("svg.daily").length, 0);
    assert.equal(document.querySelectorAll("svg.share").length, 4);
  });

  test("a browser asking /deprecations for text/html gets the page; curl and API clients keep JSON", async () => {
    const asked = async (accept: string | undefined, query = "") => {
      const answer = await request(
        `${gw.opsUrl}/deprecations${query}`,
        accept === undefined ? {} : { headers: { accept } },
      );
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.vary, "accept");
      return String(answer.headers["content-type"]).split(";")[0];
    };
    assert.equal(await asked(BROWSER_ACCEPT), "text/html");
    assert.equal(await asked(undefined), "application/json");
    assert.equal(await asked("*/*"), "application/json");
    assert.equal(await asked("application/json"), "application/json");
    assert.equal(await asked("text/html;q=0.5, application/json"), "application/json");
    // ?format wins over Accept.
    assert.equal(await asked(BROWSER_ACCEPT, "?format=json"), "application/json");
    assert.equal(await asked(BROWSER_ACCEPT, "?format=csv"), "text/csv");
  });
});

describe("the log command's page over logs that end two years before --now", () => {
  const NOW_ISO = "2030-11-20T12:00:00.000Z";
  const LOGS_END = "2028-11-20T12:00:00.000Z";
  /** A line as the gateway writes it: pino's level, time and pid, then the fields. */
  const line = (time: string, msg: string, fields: Record<string, unknown> = {}) =>
    JSON.stringify({ level: "info", time, pid: 7, ...fields, msg });
  const call = (consumer: string, iso: string) =>
    line(iso, "deprecated call", {
      operation: "getPet",
      consumer,
      calledAt: iso,
      userAgent: `${consumer}/1`,
      outcome: "proxied",
    });
  const lines = [
    line("2028-10-01T00:00:00.000Z", "gateway listening"),
    // globex stopped 27 days before the logs end; umbrella 19 days before.
    call("globex", "2028-10-05T10:00:00.000Z"),
    call("globex", "2028-10-24T10:00:00.000Z"),
    call("umbrella", "2028-11-01T10:00:00.000Z"),
    // acme called until ten days before the logs end: the last deprecated call of these logs.
    ...["2028-10-25", "2028-11-03", "2028-11-10"].map((day) => call("acme", `${day}T10:00:00.000Z`)),
    // The logs go on after the last deprecated call: other requests, to their end.
    line("2028-11-15T08:00:00.000Z", "request completed", { status: 200 }),
    line(LOGS_END, "request completed", { status: 200 }),
  ];
  let html: string;
  let report: DeprecationReport;

  before(async () => {
    const [page, json] = await Promise.all([
      runReportCommand(["--format", "html", "--now", NOW_ISO], lines),
      runReportCommand(["--now", NOW_ISO], lines),
    ]);
    assert.equal(page.code, 0, page.stderr);
    html = page.stdout;
    assert.equal(json.code, 0, json.stderr);
    report = JSON.parse(json.stdout);
  });

  test("who is quiet is counted back from the logs' end, never called migrated", () => {
    const { document } = parseHTML(html);
    // 14 days before the logs' end: acme still calls; umbrella (19 days) and globex are quiet.
    assert.deepEqual(pageFigures(html), jsonFigures(report, 14, LOGS_END));
    assert.deepEqual(
      [...document.querySelectorAll("table.calling .name")].map((name) => name.textContent),
      ["acme"],
    );
    assert.deepEqual(
      [...document.querySelectorAll("table.quiet tbody tr")].map((row) => [
        row.querySelector(".name")?.textContent,
        row.querySelector(".badge")?.textContent,
      ]),
      [
        ["umbrella", "quiet since 2028-11-01"],
        ["globex", "quiet since 2028-10-24"],
      ],
    );
    assert.ok(
      !/migrated/i.test(document.querySelector("main")?.textContent ?? ""),
      "a consumer called migrated",
    );
  });

  test("the page says where the logs end and what it counts from there; the sunset stays counted from --now", () => {
    const { document } = parseHTML(html);
    assert.equal(
      document.querySelector(".logs-end")?.textContent,
      "The logs end at 2028-11-20 12:00 UTC, 730 days before this page's date: who is quiet, and the day bars, are counted back from the logs' end; the days to sunset from 2030-11-20.",
    );
    assert.equal(document.querySelector(".logs-end time")?.getAttribute("datetime"), LOGS_END);
    assert.match(
      document.querySelector(".scope")?.textContent ?? "",
      /^Fleet-wide, from every replica's logs: 9 log lines from 2028-10-01 00:00 UTC to 2028-11-20 12:00 UTC; calls from 2028-10-05 10:00 UTC to 2028-11-10 10:00 UTC\.$/,
    );
    assert.match(
      document.querySelector("header")?.textContent ?? "",
      /no call in the 14 days before the logs end \(2028-11-20 12:00 UTC\)/,
    );
    assert.equal(pageFigures(html)[0]?.daysToSunset, 15);
  });

  test("the day bars are the last 30 days of the logs, not 30 empty days before --now", () => {
    const { document } = parseHTML(html);
    const bars = (consumer: string) =>
      [...document.querySelectorAll("tbody tr")]
        .find((row) => row.querySelector(".name")?.textContent === consumer)
        ?.querySelectorAll("svg.daily rect.bar");
    assert.deepEqual(
      [...(bars("acme") ?? [])].map((bar) => bar.getAttribute("data-day")),
      ["2028-10-25", "2028-11-03", "2028-11-10"],
    );
    assert.deepEqual(
      [...(bars("globex") ?? [])].map((bar) => bar.getAttribute("data-day")),
      // Its 2028-10-05 call is before the 30 days to 2028-11-20.
      ["2028-10-24"],
    );
    assert.match(
      document.querySelector("thead")?.textContent ?? "",
      /Calls per day, the 30 days to 2028-11-20/,
    );
  });
});

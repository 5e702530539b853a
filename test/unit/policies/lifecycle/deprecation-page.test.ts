// The deprecation page as a pure function: hostile text stays text, the style block is the one
// the Content-Security-Policy allows, and the page loads nothing.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { parseHTML } from "linkedom";
import { DailyCalls } from "../../../../policies/lifecycle/deprecation-log-lines.ts";
import {
  DEPRECATION_PAGE_CSP,
  escapeHtml,
  PAGE_COMMAND,
  pageReport,
  quietAsOf,
  renderDeprecationPage,
} from "../../../../policies/lifecycle/deprecation-page.ts";
import type { DeprecationReport } from "../../../../policies/lifecycle/deprecation-report.ts";
import { getPetSection } from "../../../support/get-pet-deprecation.ts";

// A consumer name cannot hold these (the key file's pattern), but a log line fed by hand can.
const HOSTILE_CONSUMER = `<script>alert("consumer")</script>&amp;'`;
const HOSTILE_AGENT = `"><img src=x onerror=alert(1)> & 'quoted' </td></tr><script>alert(2)</script>`;
const HOSTILE_EXCERPT = `"</td><script>alert('excerpt')</script> &lt;"`;
const HOSTILE_MESSAGE = `expected integer <b onmouseover="x">&</b>`;
// Key-shaped (long enough, with letters): the one redactor takes it out wherever it comes from.
const KEY_IN_AGENT = `curl/8.5 pgw_Q2hhbmdlIHRoaXMga2V5IG5vdw0123456789`;

const report: DeprecationReport = {
  generatedAt: "2030-11-20T12:00:00.000Z",
  countingSince: "2030-11-01T00:00:00.000Z",
  operations: [
    getPetSection({
      daysToSunset: 15,
      calls: 9,
      forgottenCallers: 0,
      callers: [
        {
          consumer: HOSTILE_CONSUMER,
          firstSeen: "2030-11-18T10:00:00.000Z",
          lastSeen: "2030-11-20T10:00:00.000Z",
          calls: 5,
          lastUserAgent: HOSTILE_AGENT,
        },
        {
          consumer: "acme",
          firstSeen: "2030-11-10T10:00:00.000Z",
          lastSeen: "2030-11-19T10:00:00.000Z",
          calls: 3,
          lastUserAgent: KEY_IN_AGENT,
        },
        {
          consumer: "globex",
          firstSeen: "2030-10-01T10:00:00.000Z",
          lastSeen: "2030-10-30T10:00:00.000Z",
          calls: 1,
          lastUserAgent: "",
        },
      ],
    }),
  ],
};

// Violation lines name their operation; one fed by hand can name anything.
const HOSTILE_OPERATION = `<img src=x onerror=alert(3)>`;
const violations = {
  operations: {
    [HOSTILE_OPERATION]: {
      violations: 1,
      byRule: { '"><b>rule': 1 },
      recent: [],
    },
    getPet: {
      violations: 2,
      byRule: { "schema:type": 2 },
      recent: [
        {
          rule: "schema:type",
          where: "/categoryId",
          count: 2,
          lastSeen: "2030-11-19T09:00:00.000Z",
          last: { upstreamStatus: 200, excerpt: HOSTILE_EXCERPT, message: HOSTILE_MESSAGE, action: "passed" },
        },
      ],
    },
  },
};

function daily() {
  const days = new DailyCalls(Date.parse(report.generatedAt));
  for (const iso of ["2030-11-18T10:00Z", "2030-11-19T10:00Z", "2030-11-19T11:00Z", "2030-11-20T09:00Z"]) {
    days.record("getPet", HOSTILE_CONSUMER, Date.parse(iso));
  }
  days.record("getPet", HOSTILE_CONSUMER, Date.parse("2030-11-20T10:00Z"));
  days.record("getPet", "acme", Date.parse("2030-11-19T10:00Z"));
  // Before the 30 days shown: counted in the report, drawn nowhere.
  days.record("getPet", "globex", Date.parse("2030-10-01T10:00Z"));
  return days.view();
}

const fleetPage = async () =>
  renderDeprecationPage({
    report: await pageReport(report, { days: 14, asOf: report.generatedAt }),
    scope: { kind: "fleet", logLines: 42 },
    daily: daily(),
    violations,
  });

test("hostile consumer names, user agents and excerpts are shown as text, never as markup", async () => {
  const html = await fleetPage();
  const { document } = parseHTML(html);
  assert.equal(document.querySelectorAll("script").length, 0);
  assert.equal(document.querySelectorAll("img").length, 0);
  assert.equal(document.querySelectorAll("b").length, 0);
  const consumers = [...document.querySelectorAll("th.consumer .name")].map((name) => name.textContent);
  assert.deepEqual(consumers, [HOSTILE_CONSUMER, "acme", "globex"]);
  const agents = [...document.querySelectorAll("td.agent")].map((td) => td.textContent);
  assert.equal(agents[0], HOSTILE_AGENT);
  assert.equal(document.querySelector("td.excerpt")?.textContent, HOSTILE_EXCERPT);
  assert.ok(document.querySelector("table.violations-recent")?.textContent?.includes(HOSTILE_MESSAGE));
  assert.deepEqual(
    [...document.querySelectorAll("table.violations-by-rule tbody tr")].map((row) =>
      [...row.querySelectorAll("th, td")].map((cell) => cell.textContent),
    ),
    [
      [HOSTILE_OPERATION, `"><b>rule`, "1"],
      ["getPet", "schema:type", "2"],
    ],
  );
  // And the bytes themselves: no raw tag of a hostile value, every & written as a reference.
  assert.ok(!html.includes("<script"), "a script tag reached the page");
  assert.ok(!html.includes("<img"), "an img tag reached the page");
  assert.ok(html.includes("&lt;script&gt;alert(&quot;consumer&quot;)&lt;/script&gt;&amp;amp;&#39;"));
});

test("a key in a user agent is redacted on the page, by the same rule as everywhere", async () => {
  const { document } = parseHTML(await fleetPage());
  const agents = [...document.querySelectorAll("td.agent")].map((td) => td.textContent);
  assert.equal(agents[1], "curl/8.5 [redacted]");
  assert.equal(agents[2], "(none)");
});

test("escapeHtml writes the five characters that can end a text or a quoted attribute as references", async () => {
  assert.equal(
    escapeHtml(`<a href="x" title='y'>&</a>`),
    "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;",
  );
  assert.equal(escapeHtml("plain text"), "plain text");
});

test("the Content-Security-Policy allows exactly the page's style block, by its sha256", async () => {
  for (const html of [
    await fleetPage(),
    renderDeprecationPage({
      report: await pageReport(report, { days: 14, asOf: report.generatedAt }),
      scope: { kind: "replica", since: undefined },
    }),
  ]) {
    const { document } = parseHTML(html);
    const styles = document.querySelectorAll("style");
    assert.equal(styles.length, 1);
    const hash = createHash("sha256")
      .update(styles[0]?.textContent ?? "")
      .digest("base64");
    assert.equal(DEPRECATION_PAGE_CSP, `default-src 'none'; style-src 'sha256-${hash}'; img-src data:`);
    const meta = document.querySelector('meta[http-equiv="Content-Security-Policy"]');
    assert.equal(meta?.getAttribute("content"), DEPRECATION_PAGE_CSP);
    // Nothing that the policy would block or that would load anything.
    assert.equal(document.querySelectorAll("[style], script, link, img, iframe, object").length, 0);
    assert.equal(document.querySelectorAll("[src], [href]").length, 0);
  }
});

test("the page splits still-calling consumers from quiet ones and draws their calls per day", async () => {
  const { document } = parseHTML(await fleetPage());
  const rows = (table: string) =>
    [...document.querySelectorAll(`table.${table} tbody tr`)].map(
      (tr) => tr.querySelector("th")?.firstChild?.textContent,
    );
  assert.deepEqual(rows("calling"), [HOSTILE_CONSUMER, "acme"]);
  assert.deepEqual(rows("quiet"), ["globex"]);
  assert.equal(document.querySelector(".days-left")?.textContent, "15");
  const bars = (row: number) =>
    [...(document.querySelectorAll("svg.daily")[row]?.querySelectorAll("rect.bar") ?? [])].map((rect) => [
      rect.getAttribute("data-day"),
      Number(rect.getAttribute("data-calls")),
    ]);
  assert.deepEqual(bars(0), [
    ["2030-11-18", 1],
    ["2030-11-19", 2],
    ["2030-11-20", 2],
  ]);
  assert.deepEqual(bars(1), [["2030-11-19", 1]]);
  assert.deepEqual(bars(2), []);
  assert.equal(
    document.querySelectorAll("svg.daily")[2]?.getAttribute("aria-label"),
    "No call in the 30 days to 2030-11-20",
  );
  assert.equal(
    document.querySelectorAll("svg.daily")[0]?.getAttribute("aria-label"),
    "5 calls in the 30 days to 2030-11-20, at most 2 on 2030-11-19",
  );
});

test("the ops page says it covers one replica since it started counting, and draws each one's share", async () => {
  const { document } = parseHTML(
    renderDeprecationPage({
      report: await pageReport(report, { days: 14, asOf: report.generatedAt }),
      scope: { kind: "replica", since: report.countingSince },
    }),
  );
  const scope = document.querySelector(".scope");
  assert.match(scope?.textContent ?? "", /^This replica only, since 2030-11-01 00:00 UTC:/);
  assert.equal(scope?.querySelector("time")?.getAttribute("datetime"), report.countingSince);
  assert.deepEqual(
    [...document.querySelectorAll("svg.share")].map((svg) => svg.getAttribute("aria-label")),
    ["5 of 9 calls (56%)", "3 of 9 calls (33%)", "1 of 9 calls (11%)"],
  );
  assert.equal(document.querySelectorAll("svg.daily").length, 0);
  assert.equal(document.querySelector("#violations"), null);
});

test("a share bar is as long as the consumer's share of every call, 72 % filling 72 % of it, and says the number", async () => {
  // 100 calls: 72 and 18 by the callers listed, 10 by callers the bounded memory forgot.
  const caller = (consumer: string, calls: number) => ({
    consumer,
    firstSeen: "2030-11-18T10:00:00.000Z",
    lastSeen: "2030-11-20T10:00:00.000Z",
    calls,
    lastUserAgent: "",
  });
  const shares: DeprecationReport = {
    generatedAt: report.generatedAt,
    operations: [
      getPetSection({
        daysToSunset: 15,
        calls: 100,
        forgottenCallers: 3,
        callers: [caller("acme", 72), caller("globex", 18)],
      }),
    ],
  };
  const { document } = parseHTML(
    renderDeprecationPage({
      report: await pageReport(shares, { days: 14, asOf: shares.generatedAt }),
      scope: { kind: "replica", since: undefined },
    }),
  );
  const drawn = [...document.querySelectorAll("tbody tr")].map((row) => {
    const width = (selector: string) =>
      Number(row.querySelector(`svg.share rect${selector}`)?.getAttribute("width"));
    return {
      consumer: row.querySelector(".name")?.textContent,
      length: Math.round((width(".bar") / width(".track")) * 1000) / 1000,
      label: row.querySelector(".share-percent")?.textContent,
    };
  });
  assert.deepEqual(drawn, [
    { consumer: "acme", length: 0.72, label: "72%" },
    { consumer: "globex", length: 0.18, label: "18%" },
  ]);
});

test("both pages' footers show the command that writes the file with --output, never a redirect", async () => {
  assert.equal(PAGE_COMMAND, "npm run deprecation-report -- --format html --output page.html");
  for (const scope of [
    { kind: "fleet", logLines: 42 },
    { kind: "replica", since: undefined },
  ] as const) {
    const { document } = parseHTML(
      renderDeprecationPage({
        report: await pageReport(report, { days: 14, asOf: report.generatedAt }),
        scope,
      }),
    );
    assert.deepEqual(
      [...document.querySelectorAll("footer code")].map((code) => code.textContent),
      [PAGE_COMMAND],
      scope.kind,
    );
  }
});

test("quiet counts back from the logs' end, or from the report's instant when that is earlier or unknown", () => {
  const generatedAt = "2030-11-20T12:00:00.000Z";
  assert.equal(quietAsOf(generatedAt, undefined), generatedAt);
  assert.equal(quietAsOf(generatedAt, { to: "2028-11-20T12:00:00.000Z" }), "2028-11-20T12:00:00.000Z");
  // Lines after --now do not move the end past it.
  assert.equal(quietAsOf(generatedAt, { to: "2031-01-01T00:00:00.000Z" }), generatedAt);
});

test("logs that end a day or more before the page's date say so; logs that end that day say nothing", async () => {
  const notice = async (logsEnd: string) => {
    const logs = { from: "2030-10-01T00:00:00.000Z", to: logsEnd };
    const { document } = parseHTML(
      renderDeprecationPage({
        report: await pageReport(report, { days: 14, asOf: quietAsOf(report.generatedAt, logs) }),
        scope: { kind: "fleet", logLines: 42, logs },
      }),
    );
    return document.querySelector(".logs-end")?.textContent;
  };
  assert.equal(await notice("2030-11-20T01:00:00.000Z"), undefined);
  assert.equal(
    await notice("2030-11-19T12:00:00.000Z"),
    "The logs end at 2030-11-19 12:00 UTC, 1 day before this page's date: who is quiet, and the day bars, are counted back from the logs' end; the days to sunset from 2030-11-20.",
  );
});

test("an operation deprecated without dates says so, with no countdown and no period bar", async () => {
  const [section] = report.operations;
  const undated = {
    ...report,
    operations: [
      { ...(section as (typeof report.operations)[number]), since: null, sunset: null, daysToSunset: null },
    ],
  };
  const { document } = parseHTML(
    renderDeprecationPage({
      report: await pageReport(undated, { days: 14, asOf: undated.generatedAt }),
      scope: { kind: "replica", since: undefined },
    }),
  );
  const dates = [...document.querySelectorAll("dd")].map((dd) => dd.textContent);
  assert.equal(dates[0], "no date set");
  assert.equal(dates[1], "none set");
  assert.equal(document.querySelector(".days")?.textContent, "No sunset date");
  assert.equal(document.querySelector("svg.period"), null);
});

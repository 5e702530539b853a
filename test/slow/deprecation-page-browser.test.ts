// The API owner's page in a real browser: Debian's Chromium, headless, loads the page a cluster of
// two workers serves on its ops port, and the file the log command builds from the same group's
// log lines. Tables and bars are there and styled (the style block passed the CSP), the console
// shows no error and nothing was blocked by the CSP, and screenshots are saved for a person to see.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, renameSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import type { DeprecationReport } from "../../policies/lifecycle/deprecation-report.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "../fixtures/programmable-backend.ts";
import {
  contractBrokenForPet13,
  deprecatedCaller,
  jsonFigures,
  pageFigures,
  runReportCommand,
} from "../support/deprecation-page.ts";
import { eventually } from "../support/eventually.ts";
import { startGatewayProgram, type TestGatewayProgram } from "../support/gateway.ts";
import { request } from "../support/http.ts";
import { writeKeysFile } from "../support/keys.ts";
import { PROJECT_ROOT } from "../support/program.ts";

/** Debian's chromium package; `.ci/run` installs it for this suite. */
const CHROMIUM = "/usr/bin/chromium";
const NO_CHROMIUM = existsSync(CHROMIUM)
  ? false
  : `no Chromium at ${CHROMIUM}: apt-get install chromium (CONTRIBUTING.md, "Packages the tests, the slow lane and the benchmark want")`;
/** Where the screenshots go (ignored by git). */
const OUTPUT = join(PROJECT_ROOT, "test-results", "deprecation-page-browser");
const HOSTILE_AGENT = `<script>alert("ua")</script> & 'quoted'`;
const at = (iso: string) => Date.parse(iso);
const NOW = at("2030-11-20T12:00:00Z");

// The browser's own names, for the functions that run in the page (the project compiles without DOM types).
declare const document: {
  readonly documentElement: { readonly scrollWidth: number };
  addEventListener(
    type: string,
    listener: (event: { violatedDirective: string; blockedURI: string }) => void,
  ): void;
};
declare function getComputedStyle(element: unknown): { fill: string; backgroundColor: string };

interface Trouble {
  readonly console: string[];
  readonly violations: string[];
}

/** Every console error, page error and CSP violation event of the page, as they happen. */
async function watch(page: Page): Promise<Trouble> {
  const trouble: Trouble = { console: [], violations: [] };
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") trouble.console.push(message.text());
  });
  page.on("pageerror", (error) => trouble.console.push(error.message));
  // Reported to the test through a binding: the page's own CSP cannot stop an init script.
  await page.exposeBinding("reportViolation", (_source, directive: string, blocked: string) => {
    trouble.violations.push(`${directive} ${blocked}`);
  });
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (event) => {
      (globalThis as unknown as { reportViolation(d: string, b: string): void }).reportViolation(
        event.violatedDirective,
        event.blockedURI,
      );
    });
  });
  return trouble;
}

describe("the deprecation page in Chromium, from a cluster of two workers", { skip: NO_CHROMIUM }, () => {
  let backend: ProgrammableBackend;
  let gateway: TestGatewayProgram;
  let browser: Browser;
  let report: DeprecationReport;
  let fileUrl: string;
  let setClock: (iso: string) => void;
  let calls = 0;

  before(async () => {
    mkdirSync(OUTPUT, { recursive: true });
    const dir = mkdtempSync(join(tmpdir(), "gw-page-"));
    const keys = writeKeysFile(["acme", "globex", "initech"], dir);
    const { keyOf } = keys;
    const clockFile = join(dir, "clock");
    // By a rename: a process reading the clock while it is rewritten would read "" (the year 1970).
    setClock = (iso) => {
      writeFileSync(`${clockFile}.next`, String(at(iso)));
      renameSync(`${clockFile}.next`, clockFile);
    };
    setClock("2030-10-20T00:00:00Z");
    backend = await startProgrammableBackend();
    backend.behave(contractBrokenForPet13("<b>seven</b>"));
    gateway = await startGatewayProgram({
      upstreamUrl: backend.url,
      keys,
      env: { WORKERS: "2", CLOCK_FILE: clockFile },
      program: ["test/fixtures/clocked-gateway.ts"],
    });
    await eventually(
      "both workers listening",
      () => gateway.lines.filter((line) => line.msg === "worker listening").length >= 2,
      20_000,
    );
    // Each call on its own connection: the primary hands connections to the workers in turn.
    const callAt = deprecatedCaller(() => `${gateway.origin}/v1`, keyOf, setClock);
    const call = async (consumer: string, iso: string, userAgent: string, pet = 1) => {
      await callAt(consumer, iso, userAgent, pet);
      calls++;
    };
    // globex stopped three weeks ago: quiet. acme calls every few days, initech daily.
    await call("globex", "2030-10-25T09:00:00Z", "globex/2");
    await call("globex", "2030-10-29T16:00:00Z", "globex/2.1");
    for (const day of ["01", "04", "08", "11", "15", "18", "19", "20"]) {
      await call("acme", `2030-11-${day}T10:00:00Z`, "acme-sync/1.1");
    }
    await call("acme", "2030-11-19T11:00:00Z", "acme-sync/1.1", 13);
    for (const day of ["14", "15", "16", "17", "18", "19", "20"]) {
      await call("initech", `2030-11-${day}T07:30:00Z`, HOSTILE_AGENT);
    }
    setClock(new Date(NOW).toISOString());
    // Workers write their lines asynchronously: the fleet's log is whole once every call is in it.
    const deprecatedLines = () => gateway.lines.filter((line) => line.msg === "deprecated call");
    await eventually("every deprecated call logged", () => deprecatedLines().length === calls, 10_000);
    await eventually("the violation logged", () =>
      gateway.lines.some((line) => line.msg === "contract violation"),
    );
    assert.equal(new Set(deprecatedLines().map((line) => line.pid)).size, 2, "both workers served calls");
    report = (await request(`${gateway.opsUrl}/deprecations`)).json<DeprecationReport>();
    const built = await runReportCommand(
      ["--format", "html", "--now", new Date(NOW).toISOString()],
      gateway.raw,
    );
    assert.equal(built.code, 0, built.stderr);
    const file = join(OUTPUT, "deprecation-report.html");
    writeFileSync(file, built.stdout);
    fileUrl = pathToFileURL(file).href;
    browser = await chromium.launch({ executablePath: CHROMIUM });
  });
  after(async () => {
    await browser?.close();
    await gateway?.stop("SIGKILL");
    await backend?.close();
  });

  test("the ops page a browser gets from /deprecations shows the merged figures, styled, with nothing blocked", async (t) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const trouble = await watch(page);
    // No ?format: the browser's own Accept header asks for the page.
    const response = await page.goto(`${gateway.opsUrl}/deprecations`);
    assert.equal(response?.status(), 200);
    assert.equal(response?.headers()["content-type"], "text/html; charset=utf-8");
    assert.match(
      response?.headers()["content-security-policy"] ?? "",
      /^default-src 'none'; style-src 'sha256-/,
    );
    const html = await page.content();
    assert.deepEqual(pageFigures(html), jsonFigures(report));
    assert.equal(report.operations[0]?.calls, calls);
    assert.match(
      (await page.locator(".scope").textContent()) ?? "",
      /^This replica only, since 2030-10-20 00:00 UTC/,
    );
    assert.equal(await page.locator("table.calling tbody tr").count(), 2);
    assert.equal(await page.locator("table.quiet tbody tr").count(), 1);
    assert.equal(await page.locator("svg.share").count(), 3);
    await assertStyledBars(page, "svg.share rect.bar");
    // On screen, each bar is the consumer's share of every call: acme's 9 of 18 fills half the track.
    const drawn: Record<string, number> = {};
    for (const row of await page.locator("tbody tr:has(svg.share)").all()) {
      const bar = await row.locator("svg.share rect.bar").boundingBox();
      const track = await row.locator("svg.share rect.track").boundingBox();
      assert.ok(bar && track, "a share bar has no box");
      drawn[(await row.locator(".name").textContent()) ?? ""] = Math.round((bar.width / track.width) * 100);
      assert.match((await row.locator(".share-percent").textContent()) ?? "", /^\d+%$/);
    }
    const total = report.operations[0]?.calls ?? 0;
    assert.deepEqual(
      drawn,
      Object.fromEntries(
        (report.operations[0]?.callers ?? []).map((row) => [
          row.consumer,
          Math.round((row.calls / total) * 100),
        ]),
      ),
    );
    assert.equal(drawn.acme, 50);
    await assertStyledBars(page, "svg.period rect.bar");
    assert.ok((await page.locator("td.agent").allTextContents()).includes(HOSTILE_AGENT));
    await page.screenshot({ path: join(OUTPUT, "ops-page.png"), fullPage: true });
    assert.deepEqual(trouble, { console: [], violations: [] });
    t.diagnostic(`screenshot: ${join(OUTPUT, "ops-page.png")}`);
    await context.close();
  });

  test("the log command's file shows day bars for every replica's calls, on a laptop, a phone and in dark mode", async (t) => {
    // The page's colours in each scheme (deprecation-page.ts's style: --bg, --bar).
    for (const [name, options, colours] of [
      [
        "report-laptop.png",
        { viewport: { width: 1280, height: 900 } },
        { background: "rgb(255, 255, 255)", bar: "rgb(31, 95, 191)" },
      ],
      [
        "report-phone-dark.png",
        { viewport: { width: 390, height: 844 }, colorScheme: "dark" as const },
        { background: "rgb(18, 20, 23)", bar: "rgb(127, 176, 255)" },
      ],
    ] as const) {
      const context = await browser.newContext(options);
      const page = await context.newPage();
      const trouble = await watch(page);
      await page.goto(fileUrl);
      assert.deepEqual(pageFigures(await page.content()), jsonFigures(report));
      // Every line is on the group's clock: the logs run from its start to a request at or after
      // the last call (the last lines may still be on their way when the command reads them).
      assert.match(
        (await page.locator(".scope").textContent()) ?? "",
        /^Fleet-wide, from every replica's logs: \d+ log lines from 2030-10-20 00:00 UTC to 2030-11-20 1[0-2]:00 UTC; calls from 2030-10-25 09:00 UTC to 2030-11-20 10:00 UTC\.$/,
      );
      assert.equal(await page.locator("svg.daily").count(), 3);
      // acme: 9 calls over 8 days, globex's two calls, initech's 7 days.
      assert.equal(await page.locator("svg.daily rect.bar").count(), 8 + 2 + 7);
      await assertStyledBars(page, "svg.daily rect.bar");
      assert.deepEqual(
        {
          background: await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor),
          bar: await page
            .locator("svg.daily rect.bar")
            .first()
            .evaluate((bar) => getComputedStyle(bar).fill),
        },
        colours,
        `${name}: the scheme's colours`,
      );
      // Nothing wider than the screen: a phone scrolls down, never sideways.
      assert.ok(
        (await page.evaluate(() => document.documentElement.scrollWidth)) <= options.viewport.width,
        `${name}: wider than its ${options.viewport.width} px viewport`,
      );
      assert.equal(await page.locator("table.violations-by-rule tbody tr").count(), 1);
      assert.equal(await page.locator("td.excerpt").first().textContent(), '"<b>seven</b>"');
      await page.screenshot({ path: join(OUTPUT, name), fullPage: true });
      assert.deepEqual(trouble, { console: [], violations: [] }, name);
      t.diagnostic(`screenshot: ${join(OUTPUT, name)}`);
      await context.close();
    }
  });

  test("the watch sees a CSP violation: the same page with an inline style attribute and an image is caught", async () => {
    const answer = await request(`${gateway.opsUrl}/deprecations?format=html`);
    const tampered = answer.body.replace(
      "<main>",
      `<main><p style="color:red">styled</p><img alt="" src="http://127.0.0.1:9/pixel.png">`,
    );
    const server = http.createServer((_req, res) => {
      res.writeHead(200, {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": String(answer.headers["content-security-policy"]),
      });
      res.end(tampered);
    });
    server.listen(0, "127.0.0.1");
    await new Promise((listening) => server.once("listening", listening));
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const trouble = await watch(page);
      await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      await eventually("both violations reported", () => trouble.violations.length >= 2);
      assert.ok(
        trouble.violations.some((v) => v.startsWith("style-src")),
        trouble.violations.join("; "),
      );
      assert.ok(
        trouble.violations.some((v) => v.startsWith("img-src")),
        trouble.violations.join("; "),
      );
      assert.ok(trouble.console.some((text) => text.includes("Content Security Policy")));
    } finally {
      await context.close();
      server.close();
    }
  });
});

/** The bars are drawn (a size on screen) and coloured by the page's style, not SVG's default black. */
async function assertStyledBars(page: Page, selector: string): Promise<void> {
  const bars = page.locator(selector);
  assert.ok((await bars.count()) > 0, `no ${selector}`);
  const box = await bars.first().boundingBox();
  assert.ok(box && box.width > 0 && box.height > 0, `${selector} has no size on screen`);
  const fill = await bars.first().evaluate((bar) => getComputedStyle(bar).fill);
  assert.notEqual(fill, "rgb(0, 0, 0)", `${selector} is unstyled: the style block was refused`);
}

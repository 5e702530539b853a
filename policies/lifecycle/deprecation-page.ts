// The deprecation report as a page an API owner opens on a Monday: who must still migrate and how
// long is left, without reading JSON. One pure function of the report data, for the log command's
// fleet-wide file (mailed around) and for the ops port's page over its in-memory report.
//
// The page runs nothing and loads nothing: no script, styles in one inline block allowed by its
// hash, bars drawn as inline SVG. Every text that came from a client or a backend (consumer
// names, user agents, excerpts) is escaped where it is written, attribute or text alike.
import { createHash } from "node:crypto";
import { skippedLinesText } from "../../src/log-lines.ts";
import { redactKeys } from "../../src/redaction.ts";
import { type Slices, slices } from "../../src/slices.ts";
import { DAYS_SHOWN, type DailyCallsView } from "./deprecation-log-lines.ts";
import {
  byRecency,
  type CallerRow,
  DAY_MS,
  type DeprecationReport,
  type OperationReport,
} from "./deprecation-report.ts";

/** A character HTML text or a quoted attribute value must carry as a character reference. */
const HTML_SPECIAL = /[&<>"']/g;

/**
 * A consumer with no call in this many days before the end of the figures is shown as quiet: a
 * silence in the logs, which a migration explains as well as a holiday or a monthly batch job.
 */
export const DEFAULT_QUIET_DAYS = 14;
/**
 * The callers the page lists per operation, most recent first; the figures above the lists count
 * them all. 100,000 callers made a 237.5 MB page: a person reads the top of it, a spreadsheet the rest (CSV).
 */
export const PAGE_CALLERS = 100;

/** The PAGE_CALLERS most recent of the rows added, in n log N whatever their order. */
class MostRecent {
  count = 0;
  #held: CallerRow[] = [];
  add(row: CallerRow): void {
    this.count++;
    this.#held.push(row);
    // Sorted and cut once twice the rows are held.
    if (this.#held.length >= 2 * PAGE_CALLERS) this.#held = this.rows();
  }
  rows(): CallerRow[] {
    return this.#held.sort(byRecency).slice(0, PAGE_CALLERS);
  }
}

/** Who counts as quiet: no call in `days` days before `asOf`. */
export interface QuietRule {
  readonly days: number;
  /**
   * The end of the figures, which quiet is counted back from: the report's instant for the ops
   * port (it counts up to now), the last instant of the logs for the log command (see quietAsOf).
   */
  readonly asOf: string;
}

/**
 * The instant the log command counts quiet from: the logs' last instant, or the report's when
 * that is earlier (lines after --now). Without any dated line, the report's.
 */
export function quietAsOf(generatedAt: string, logs: { readonly to: string } | undefined): string {
  return logs === undefined || logs.to > generatedAt ? generatedAt : logs.to;
}

/** What the page shows of one operation: its figures over every caller, and the most recent callers. */
export interface PageOperation extends Omit<OperationReport, "callers"> {
  /** Callers with a call within the quiet days: at most PAGE_CALLERS, most recent first. */
  readonly calling: readonly CallerRow[];
  /** The others (quiet since their last call): at most PAGE_CALLERS, most recent first. */
  readonly quiet: readonly CallerRow[];
  /** How many callers the report holds in each list. */
  readonly callingCount: number;
  readonly quietCount: number;
  /** The earliest first seen and latest last seen of every caller; undefined without callers. */
  readonly firstSeen: string | undefined;
  readonly lastSeen: string | undefined;
}

/** The report as the page reads it. */
export interface PageReport {
  readonly generatedAt: string;
  readonly quiet: QuietRule;
  readonly operations: readonly PageOperation[];
}

/**
 * The page's view of a report: one pass over the callers (in slices when `work` is given, for the
 * ops port), keeping PAGE_CALLERS of them, so the page and its making stay bounded however many
 * callers the report holds.
 */
export async function pageReport(
  report: DeprecationReport,
  quiet: QuietRule,
  work: Slices = slices(Number.POSITIVE_INFINITY),
): Promise<PageReport> {
  const callingSince = Date.parse(quiet.asOf) - quiet.days * DAY_MS;
  const operations: PageOperation[] = [];
  for (const { callers, ...section } of report.operations) {
    const calling = new MostRecent();
    const quietRows = new MostRecent();
    let firstSeen: string | undefined;
    let lastSeen: string | undefined;
    for (const row of callers) {
      (Date.parse(row.lastSeen) < callingSince ? quietRows : calling).add(row);
      if (firstSeen === undefined || row.firstSeen < firstSeen) firstSeen = row.firstSeen;
      if (lastSeen === undefined || row.lastSeen > lastSeen) lastSeen = row.lastSeen;
      if (work.due()) await work.next();
    }
    operations.push({
      ...section,
      calling: calling.rows(),
      quiet: quietRows.rows(),
      callingCount: calling.count,
      quietCount: quietRows.count,
      firstSeen,
      lastSeen,
    });
  }
  return { generatedAt: report.generatedAt, quiet, operations };
}

// Colours meet WCAG AA on their background in both schemes (text 4.5:1, bars 3:1).
const STYLE = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1a1a1a;--muted:#555;--line:#d0d0d0;--bar:#1f5fbf;--track:#e3e7ee;--past:#a32020;--ok:#1b6b31}
@media (prefers-color-scheme:dark){:root{--bg:#121417;--fg:#e8e8e8;--muted:#b4b4b4;--line:#3a3f46;--bar:#7fb0ff;--track:#2a2f37;--past:#ff9c9c;--ok:#7fd69a}}
html{background:var(--bg);color:var(--fg)}
body{margin:0 auto;max-width:75rem;padding:1rem;font:1rem/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
h1{font-size:1.5rem;margin:.25rem 0}
h2{font-size:1.25rem;margin:2.5rem 0 .5rem;overflow-wrap:anywhere}
h3{font-size:1rem;margin:1.5rem 0 .25rem}
.scope{font-weight:600;border-left:.25rem solid var(--bar);padding-left:.5rem}
.muted,caption,dt{color:var(--muted)}
.countdown{display:flex;flex-wrap:wrap;gap:.5rem 2.5rem;align-items:center}
.days{font-size:2.25rem;font-weight:700;line-height:1.1;margin:.25rem 0}
.days.past{color:var(--past)}
dl{display:grid;grid-template-columns:max-content auto;gap:.125rem 1rem;margin:.5rem 0}
dd{margin:0}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;min-width:44rem;margin:1rem 0}
td time{white-space:nowrap}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{border-bottom:1px solid var(--line);padding:.375rem .5rem;text-align:left;vertical-align:top}
.n{text-align:right;font-variant-numeric:tabular-nums}
.agent,.excerpt,code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.875rem;overflow-wrap:anywhere}
.badge{color:var(--muted);font-weight:600;font-size:.875rem}
.logs-end{font-weight:600;color:var(--past)}
h2 code{font-size:1.125rem}
svg{display:block}
.share-cell{display:flex;align-items:center;gap:.5rem}
.share-percent{font-variant-numeric:tabular-nums;min-width:2.5rem}
.bar{fill:var(--bar)}
.track{fill:var(--track)}
@media (max-width:40rem){
.scroll table{min-width:0}
.cards thead{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}
.cards tr{display:block;border-bottom:1px solid var(--line);padding:.5rem 0}
.cards th,.cards td{display:flex;gap:.75rem;border:0;padding:.125rem 0;text-align:left}
.cards td::before{content:attr(data-label);color:var(--muted);flex:0 0 7.5rem;font:1rem/1.5 system-ui,sans-serif}
}
`;

/**
 * The command that builds the page from the logs, as the footer shows it: `--output`, because a
 * redirect of `npm run` without `-s` puts npm's banner at the top of the file.
 */
export const PAGE_COMMAND = "npm run deprecation-report -- --format html --output page.html";

/** The page's Content-Security-Policy: nothing but its own inline style block. */
export const DEPRECATION_PAGE_CSP = `default-src 'none'; style-src 'sha256-${createHash("sha256").update(STYLE).digest("base64")}'; img-src data:`;

/** What the rendered figures cover, said plainly at the top of the page. */
export type PageScope =
  /** The log command: every replica's log lines, and the first and last instant they carry. */
  | {
      readonly kind: "fleet";
      readonly logLines: number;
      /** Lines too long to be the gateway's, skipped unread (src/log-lines.ts). */
      readonly skippedLines?: number;
      readonly logs?: { readonly from: string; readonly to: string } | undefined;
    }
  /** The ops port: one replica's in-memory figures since it started counting. */
  | { readonly kind: "replica"; readonly since: string | undefined };

/** Contract violations by operation, in the shape of the drift report (/contract/violations). */
export interface ViolationFigures {
  readonly operations: Readonly<
    Record<
      string,
      {
        readonly violations: number;
        readonly byRule: Readonly<Record<string, number>>;
        readonly recent: readonly {
          readonly rule: string;
          readonly where: string;
          readonly count: number;
          readonly lastSeen: string;
          readonly last: {
            readonly upstreamStatus: number;
            readonly excerpt: string;
            readonly message: string;
            readonly action: string;
          };
        }[];
      }
    >
  >;
}

export interface DeprecationPage {
  readonly report: PageReport;
  readonly scope: PageScope;
  /** Calls per day (the log command only): drawn as bars; without them a bar shows each one's share. */
  readonly daily?: DailyCallsView;
  /** Contract violations over the same log lines (the log command only). */
  readonly violations?: ViolationFigures;
}

export function renderDeprecationPage(page: DeprecationPage): string {
  const { report } = page;
  const now = Date.parse(report.generatedAt);
  const sections = report.operations.map((section, index) => operationSection(page, section, index, now));
  if (sections.length === 0) sections.push(`<p>The OpenAPI document marks no operation deprecated.</p>`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${DEPRECATION_PAGE_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Deprecated operations: who still calls them</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>Deprecated operations: who still calls them</h1>
<p class="scope">${scopeText(page)}</p>
<p class="muted">Generated ${time(report.generatedAt)}. ${quietText(page)}</p>${logsEndText(page)}
</header>
<main>
${sections.join("\n")}
${page.violations === undefined ? "" : violationSection(page.violations)}
</main>
<footer class="muted">
<p>${
    page.scope.kind === "fleet"
      ? `Built by <code>${PAGE_COMMAND}</code> from the gateway's log lines.`
      : `Per-day history, contract violations and every replica's calls: <code>${PAGE_COMMAND}</code> over the log lines.`
  }</p>
</footer>
</body>
</html>
`;
}

function scopeText(page: DeprecationPage): string {
  const { scope } = page;
  if (scope.kind === "replica") {
    return `This replica only${scope.since === undefined ? "" : `, since ${time(scope.since)}`}: these figures live in its memory, start again at every deploy and count only the calls this replica served.`;
  }
  const instants: string[] = [];
  for (const section of page.report.operations) {
    if (section.firstSeen !== undefined) instants.push(section.firstSeen);
    if (section.lastSeen !== undefined) instants.push(section.lastSeen);
  }
  for (const drift of Object.values(page.violations?.operations ?? {})) {
    for (const entry of drift.recent) instants.push(entry.lastSeen);
  }
  instants.sort();
  const lines = `${scope.logLines} log ${plural(scope.logLines, "line")}${
    scope.logs === undefined ? "" : ` from ${time(scope.logs.from)} to ${time(scope.logs.to)}`
  }${scope.skippedLines ? ` (${skippedLinesText(scope.skippedLines)})` : ""}`;
  const from = instants[0];
  const to = instants.at(-1);
  if (from === undefined || to === undefined)
    return `Fleet-wide, from every replica's logs: no call in ${lines}.`;
  return `Fleet-wide, from every replica's logs: ${lines}; calls from ${time(from)} to ${time(to)}.`;
}

/** Who counts as quiet, and from when that is counted. */
function quietText(page: DeprecationPage): string {
  const { days, asOf } = page.report.quiet;
  const before =
    page.scope.kind === "fleet" && asOf !== page.report.generatedAt
      ? `before the logs end (${time(asOf)})`
      : `before ${time(asOf)}`;
  return `A consumer with no call in the ${days} ${plural(days, "day")} ${before} is listed as quiet since its last call: a silence in these figures, not proof that it moved.`;
}

/** Logs that end a day or more before the page's date say so: the page counts from their end. */
function logsEndText(page: DeprecationPage): string {
  const { asOf } = page.report.quiet;
  const behind = Math.floor((Date.parse(page.report.generatedAt) - Date.parse(asOf)) / DAY_MS);
  if (page.scope.kind !== "fleet" || behind < 1) return "";
  return `\n<p class="logs-end">The logs end at ${time(asOf)}, ${behind} ${plural(behind, "day")} before this page's date: who is quiet, and the day bars, are counted back from the logs' end; the days to sunset from ${date(page.report.generatedAt)}.</p>`;
}

function operationSection(page: DeprecationPage, section: PageOperation, index: number, now: number): string {
  const { calling, quiet, callingCount } = section;
  const { days, asOf } = page.report.quiet;
  const name = section.path === "" ? section.operation : `${section.method} ${section.path}`;
  const id = `operation-${index}`;
  const bars = barsOf(page, section);
  const shown = (count: number, listed: number) =>
    listed < count ? `, the ${listed} most recent shown` : "";
  return `<section aria-labelledby="${id}">
<h2 id="${id}"><code>${escapeHtml(name)}</code> <span class="muted">(${escapeHtml(section.operation)})</span></h2>
<div class="countdown">
${countdown(section)}
<dl>
<dt>Deprecated since</dt><dd>${section.since === null ? "no date set" : date(section.since)}</dd>
<dt>Sunset</dt><dd>${section.sunset === null ? "none set" : date(section.sunset)}</dd>
<dt>Successor</dt><dd>${section.successor === null ? "none named" : `<code>${escapeHtml(section.successor)}</code>`}</dd>
<dt>Calls</dt><dd class="calls">${section.calls}</dd>
<dt>Still calling</dt><dd class="calling">${callingCount}</dd>
<dt>Quiet</dt><dd class="quiet-count">${section.quietCount}</dd>${
    section.forgottenCallers > 0
      ? `\n<dt>Forgotten callers</dt><dd class="forgotten">${section.forgottenCallers} (dropped to bound memory; the calls above stay exact)</dd>`
      : ""
  }
</dl>
</div>
${periodBar(section, now)}${
  calling.length < callingCount || quiet.length < section.quietCount
    ? `\n<p class="cut">The ${PAGE_CALLERS} most recent consumers of each list are shown; ${page.scope.kind === "fleet" ? "<code>--format csv</code>" : "<code>?format=csv</code>"} has every one.</p>`
    : ""
}
${callerTable(`Still calling ${escapeHtml(name)}: ${callingCount} ${plural(callingCount, "consumer")}${shown(callingCount, calling.length)}, most recent call first`, "calling", calling, bars)}
${
  section.quietCount === 0
    ? `<p class="muted">No consumer has been quiet for ${days} ${plural(days, "day")} before ${time(asOf)}.</p>`
    : callerTable(
        `Quiet: no call in the ${days} ${plural(days, "day")} before ${time(asOf)}${shown(section.quietCount, quiet.length)}, most recent call first`,
        "quiet",
        quiet,
        bars,
      )
}
</section>`;
}

function countdown(section: PageOperation): string {
  const days = section.daysToSunset;
  if (days === null) return `<p class="days">No sunset date</p>`;
  if (days > 0)
    return `<p class="days"><span class="days-left">${days}</span> ${plural(days, "day")} left</p>`;
  if (days === 0) return `<p class="days past">Sunset today</p>`;
  return `<p class="days past">Sunset passed ${-days} ${plural(-days, "day")} ago</p>`;
}

/** How much of the way from deprecation to sunset is behind. */
function periodBar(section: PageOperation, now: number): string {
  if (section.sunset === null || section.since === null) return "";
  const since = Date.parse(section.since);
  const span = Date.parse(section.sunset) - since;
  const share = span <= 0 ? 1 : Math.min(1, Math.max(0, (now - since) / span));
  const percent = Math.round(share * 100);
  const passed = (from: string, to: string) =>
    `${percent}% of the time from deprecation (${from}) to sunset (${to}) has passed`;
  const label = escapeHtml(passed(section.since.slice(0, 10), section.sunset.slice(0, 10)));
  return `<svg class="period" width="100%" height="12" viewBox="0 0 100 12" preserveAspectRatio="none" role="img" aria-label="${label}"><rect class="track" width="100" height="12"/><rect class="bar" width="${(share * 100).toFixed(2)}" height="12"/></svg>
<p class="muted" aria-hidden="true">${passed(date(section.since), date(section.sunset))}.</p>`;
}

interface Bars {
  readonly heading: string;
  cell(row: CallerRow): string;
}

/** Day bars where the calls per day are known, else each consumer's share of the calls. */
function barsOf(page: DeprecationPage, section: PageOperation): Bars {
  const daily = page.daily;
  if (daily === undefined) {
    return {
      heading: "Share of calls",
      // The track is every call of the operation (forgotten callers' included): a bar is as long
      // as its share, never scaled to the biggest caller, so 72 % fills 72 % of the track.
      cell(row) {
        const share = section.calls === 0 ? 0 : Math.min(1, row.calls / section.calls);
        const percent = sharePercent(share);
        return `<span class="share-cell"><svg class="share" width="120" height="14" viewBox="0 0 100 14" preserveAspectRatio="none" role="img" aria-label="${row.calls} of ${section.calls} calls (${percent})"><rect class="track" width="100" height="14"/><rect class="bar" width="${(share * 100).toFixed(2)}" height="14"/></svg><span class="share-percent" aria-hidden="true">${percent}</span></span>`;
      },
    };
  }
  const counts = daily.counts.get(section.operation);
  let most = 1;
  for (const days of counts?.values() ?? []) for (const n of days) most = Math.max(most, n);
  const first = Date.parse(daily.firstDay);
  const window = `the ${DAYS_SHOWN} days to ${daily.lastDay}`;
  return {
    heading: `Calls per day, ${window}`,
    cell(row) {
      const days = counts?.get(row.consumer) ?? new Array<number>(DAYS_SHOWN).fill(0);
      const total = days.reduce((sum, n) => sum + n, 0);
      const busiest = days.indexOf(Math.max(...days));
      const label =
        total === 0
          ? `No call in ${window}`
          : `${total} ${plural(total, "call")} in ${window}, at most ${days[busiest]} on ${dayOf(first, busiest)}`;
      const rects = days
        .map((n, day) => {
          const x = day * 6;
          if (n === 0) return `<rect class="track" x="${x}" y="31" width="5" height="1"/>`;
          const height = Math.max(2, Math.round((n / most) * 32));
          return `<rect class="bar" x="${x}" y="${32 - height}" width="5" height="${height}" data-day="${dayOf(first, day)}" data-calls="${n}"><title>${dayOf(first, day)}: ${n} ${plural(n, "call")}</title></rect>`;
        })
        .join("");
      return `<svg class="daily" width="${DAYS_SHOWN * 6}" height="32" viewBox="0 0 ${DAYS_SHOWN * 6} 32" role="img" aria-label="${label}">${rects}</svg>`;
    },
  };
}

/** 56%; "<1%" for a share that rounds to none but is not none. */
function sharePercent(share: number): string {
  const percent = Math.round(share * 100);
  return percent === 0 && share > 0 ? "<1%" : `${percent}%`;
}

function callerTable(caption: string, kind: string, rows: readonly CallerRow[], bars: Bars): string {
  if (rows.length === 0) return `<p class="muted">No consumer is still calling.</p>`;
  const body = rows
    .map(
      (row) => `<tr>
<th scope="row" class="consumer"><span class="name">${escapeHtml(row.consumer)}</span>${kind === "quiet" ? ` <span class="badge">quiet since ${date(row.lastSeen)}</span>` : ""}</th>
<td class="n" data-label="Calls">${row.calls}</td>
<td data-label="First seen">${time(row.firstSeen)}</td>
<td data-label="Last seen">${time(row.lastSeen)}</td>
<td class="agent" data-label="Last user agent">${userAgent(row.lastUserAgent)}</td>
<td data-label="${bars.heading}">${bars.cell(row)}</td>
</tr>`,
    )
    .join("\n");
  return `<div class="scroll"><table class="${kind} cards">
<caption>${caption}</caption>
<thead><tr><th scope="col">Consumer</th><th scope="col" class="n">Calls</th><th scope="col">First seen</th><th scope="col">Last seen</th><th scope="col">Last user agent</th><th scope="col">${bars.heading}</th></tr></thead>
<tbody>
${body}
</tbody>
</table></div>`;
}

function violationSection(violations: ViolationFigures): string {
  const operations = Object.entries(violations.operations).filter(([, drift]) => drift.violations > 0);
  if (operations.length === 0) {
    return `<section aria-labelledby="violations"><h2 id="violations">Contract violations</h2><p>No contract violation in these log lines.</p></section>`;
  }
  const byRule = operations.flatMap(([operation, drift]) =>
    Object.entries(drift.byRule)
      .sort(([, a], [, b]) => b - a)
      .map(
        ([rule, count]) =>
          `<tr><th scope="row"><code>${escapeHtml(operation)}</code></th><td><code>${escapeHtml(rule)}</code></td><td class="n">${count}</td></tr>`,
      ),
  );
  const recent = operations.flatMap(([operation, drift]) =>
    drift.recent.map(
      (entry) => `<tr>
<th scope="row"><code>${escapeHtml(operation)}</code></th>
<td data-label="Last seen">${time(entry.lastSeen)}</td>
<td data-label="Rule"><code>${escapeHtml(entry.rule)}</code></td>
<td data-label="Where"><code>${escapeHtml(entry.where === "" ? "(the answer)" : entry.where)}</code></td>
<td class="n" data-label="Times">${entry.count}</td>
<td class="n" data-label="Backend status">${entry.last.upstreamStatus}</td>
<td class="excerpt" data-label="Excerpt">${escapeHtml(redactKeys(entry.last.excerpt, [], NO_KNOWN_KEYS))}</td>
<td data-label="Message">${escapeHtml(redactKeys(entry.last.message, [], NO_KNOWN_KEYS))} <span class="muted">(${escapeHtml(entry.last.action)})</span></td>
</tr>`,
    ),
  );
  return `<section aria-labelledby="violations">
<h2 id="violations">Contract violations</h2>
<div class="scroll"><table class="violations-by-rule">
<caption>Answers of the backend that broke the interface, by operation and rule</caption>
<thead><tr><th scope="col">Operation</th><th scope="col">Rule</th><th scope="col" class="n">Violations</th></tr></thead>
<tbody>
${byRule.join("\n")}
</tbody>
</table></div>
<div class="scroll"><table class="violations-recent cards">
<caption>Most recent examples, one per rule and place</caption>
<thead><tr><th scope="col">Operation</th><th scope="col">Last seen</th><th scope="col">Rule</th><th scope="col">Where</th><th scope="col" class="n">Times</th><th scope="col" class="n">Backend status</th><th scope="col">Excerpt</th><th scope="col">Message</th></tr></thead>
<tbody>
${recent.join("\n")}
</tbody>
</table></div>
</section>`;
}

// The page is mailed and forwarded: the one redactor runs again over what callers and backends
// wrote, so that a line from an older gateway, or fed in by hand, cannot carry a key onto it.
const NO_KNOWN_KEYS = () => false;

function userAgent(text: string): string {
  return text === "" ? `<span class="muted">(none)</span>` : escapeHtml(redactKeys(text, [], NO_KNOWN_KEYS));
}

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text for HTML, safe both between tags and inside a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(HTML_SPECIAL, (c) => HTML_ESCAPES[c] ?? c);
}

/** 2030-11-03 08:30 UTC, with the exact instant in the datetime attribute. */
function time(iso: string): string {
  return `<time datetime="${escapeHtml(iso)}">${escapeHtml(iso.slice(0, 10))} ${escapeHtml(iso.slice(11, 16))} UTC</time>`;
}

function date(iso: string): string {
  if (iso === "") return "unknown";
  return `<time datetime="${escapeHtml(iso)}">${escapeHtml(iso.slice(0, 10))}</time>`;
}

function dayOf(first: number, day: number): string {
  return new Date(first + day * DAY_MS).toISOString().slice(0, 10);
}

function plural(count: number, word: string): string {
  return count === 1 ? word : `${word}s`;
}

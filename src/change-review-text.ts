// The change review as people read it (text), as a pull request comment (Markdown) and as tools
// read it (JSON). Names come from documents and consumers from log lines, which others wrote: no
// control character of theirs reaches a terminal, and none of their text is Markdown to a renderer.
import { type ChangeReview, DAY_MS, type ReviewedChange, reviewExitCode } from "./change-review.ts";
import { skippedLinesText } from "./log-lines.ts";
import { terminalSafeJson, withoutTerminalControls } from "./terminal-text.ts";

const count = (n: number) => n.toLocaleString("en-US");
const plural = (n: number, one: string, many = `${one}s`) => `${count(n)} ${n === 1 ? one : many}`;
const day = (at: number) => new Date(at).toISOString().slice(0, 10);

function ago(review: ChangeReview, at: number): string {
  // Calendar days (UTC): a call late yesterday was yesterday, however few hours ago.
  const days = Math.floor(review.now / DAY_MS) - Math.floor(at / DAY_MS);
  return days <= 0 ? "today" : days === 1 ? "1 day ago" : `${count(days)} days ago`;
}

/** "listPets (GET /pets)", or nothing for a change of the whole document. */
function where(change: ReviewedChange): string {
  return change.operation === undefined ? "" : `${change.operation} (${change.method} ${change.path}): `;
}

function summary(review: ChangeReview): string {
  const breaking = review.changes.filter((c) => c.breaking);
  const other = review.changes.length - breaking.length;
  const used = breaking.filter((c) => (c.usage?.consumers.length ?? 0) > 0).length;
  const head = plural(breaking.length, "breaking change");
  const who = breaking.length === 0 || review.logs === undefined ? "" : `, ${count(used)} of them used`;
  return `${head}${who}; ${plural(other, "other change")}`;
}

function logsLine(review: ChangeReview): string {
  const logs = review.logs;
  if (logs === undefined) return "logs: none given (--logs): who each breaking change hits is unknown";
  const span =
    logs.from === undefined || logs.to === undefined ? "" : ` (${day(logs.from)} to ${day(logs.to)})`;
  // Without access lines, the usage lines (policies/usage) are what the review read.
  const read =
    logs.calls === 0 && logs.usageLines > 0
      ? plural(logs.usageLines, "usage line")
      : plural(logs.calls, "call");
  const skipped = logs.skippedLines === 0 ? "" : ` (${skippedLinesText(logs.skippedLines)})`;
  return `logs: ${plural(logs.lines, "line")}${skipped}, ${read} in the ${count(review.days)} days to ${day(review.now)}${span}`;
}

/** What the logs say about one breaking change, one line per consumer. */
function usageLines(review: ChangeReview, change: ReviewedChange): string[] {
  const usage = change.usage;
  if (usage === undefined) return ["who: unknown (no logs given)"];
  const consumers = usage.consumers.map(
    (use) => `${use.consumer}: ${plural(use.calls, "call")}, last ${ago(review, use.lastSeen)}`,
  );
  const more =
    usage.forgotten === 0
      ? []
      : [`and others: ${count(usage.forgotten)} forgotten past --max-consumers: counts are low`];
  if (usage.attribution === "calls") {
    return consumers.length === 0
      ? [`no consumer used this in ${plural(review.days, "day")}`]
      : [...consumers, ...more];
  }
  const operation = change.operation ?? "the operation";
  if (usage.attribution === "received") {
    return consumers.length === 0
      ? [`no consumer received it on the answers sampled in ${plural(review.days, "day")}`]
      : [`received on sampled answers (or none of theirs was sampled):`, ...consumers, ...more];
  }
  return consumers.length === 0
    ? [`not recorded; no consumer called ${operation} in ${plural(review.days, "day")}`]
    : [`not recorded; callers of ${operation} who may rely on it:`, ...consumers, ...more];
}

export function reviewText(review: ChangeReview): string {
  const breaking = review.changes.filter((c) => c.breaking);
  const other = review.changes.filter((c) => !c.breaking);
  const lines = [
    `Review of ${review.candidate} against the running document ${review.running}`,
    summary(review),
    logsLine(review),
  ];
  if (breaking.length > 0) lines.push("", "Breaking:");
  for (const change of breaking) {
    lines.push(`  - ${where(change)}${change.message} [${change.direction}]`);
    for (const line of usageLines(review, change)) lines.push(`      ${line}`);
  }
  if (other.length > 0) lines.push("", "Other changes:");
  for (const change of other) {
    const security = change.weakensSecurity ? " (weakens security: a reload refuses it)" : "";
    lines.push(`  - ${where(change)}${change.message} [${change.direction}]${security}`);
  }
  if (review.changes.length === 0) lines.push("", "No difference.");
  return `${lines.map(withoutTerminalControls).join("\n")}\n`;
}

/** For a pull request comment: a table of the breaking changes, the others folded away. */
export function reviewMarkdown(review: ChangeReview): string {
  const breaking = review.changes.filter((c) => c.breaking);
  const other = review.changes.filter((c) => !c.breaking);
  const lines = [
    `### Change review: ${code(review.candidate)} against ${code(review.running)}`,
    "",
    `**${md(summary(review))}**. ${md(logsLine(review))}.`,
  ];
  if (breaking.length > 0) {
    lines.push("", "| Operation | Breaking change | Side | Who it breaks |", "| --- | --- | --- | --- |");
    for (const change of breaking) {
      const operation =
        change.operation === undefined
          ? "all"
          : `${code(change.operation)} ${md(`${change.method} ${change.path}`)}`;
      lines.push(
        `| ${operation} | ${md(change.message)} | ${change.direction} | ${usageLines(review, change).map(md).join("<br>")} |`,
      );
    }
  }
  if (other.length > 0) {
    lines.push("", `<details><summary>${plural(other.length, "other change")}</summary>`, "");
    for (const change of other)
      lines.push(`- ${md(`${where(change)}${change.message}`)} (${change.direction})`);
    lines.push("", "</details>");
  }
  return `${lines.join("\n")}\n`;
}

export function reviewJson(review: ChangeReview): string {
  const iso = (at: number | undefined) => (at === undefined ? null : new Date(at).toISOString());
  const data = {
    running: review.running,
    candidate: review.candidate,
    now: iso(review.now),
    days: review.days,
    logs:
      review.logs === undefined
        ? null
        : { ...review.logs, from: iso(review.logs.from), to: iso(review.logs.to) },
    exitCode: reviewExitCode(review),
    changes: review.changes.map((change) => ({
      ...change,
      ...(change.usage && {
        usage: {
          ...change.usage,
          consumers: change.usage.consumers.map((use) => ({ ...use, lastSeen: iso(use.lastSeen) })),
        },
      }),
    })),
  };
  // Escaped rather than stripped: a tool gets the names exactly as written.
  return `${terminalSafeJson(JSON.stringify(data, null, 2))}\n`;
}

/** Text as Markdown shows it literally: no emphasis, link, HTML or table cell of someone else's. */
function md(text: string): string {
  return withoutTerminalControls(text).replace(/[\\`*_[\]<>|#~]/g, (c) =>
    c === "<" ? "&lt;" : c === ">" ? "&gt;" : `\\${c}`,
  );
}

function code(text: string): string {
  return `\`${withoutTerminalControls(text).replaceAll("`", "'")}\``;
}

/** One line per breaking change, with whom it breaks: what a reload logs as advice. */
export function reviewAdvice(review: ChangeReview): string[] {
  return review.changes
    .filter((change) => change.breaking)
    .map((change) =>
      withoutTerminalControls(`${where(change)}${change.message}: ${oneLineOf(usageLines(review, change))}`),
    );
}

/** "callers …: a; b", or "a; b": the lines of one change's usage on one line. */
function oneLineOf(lines: readonly string[]): string {
  const [head = "", ...rest] = lines;
  return head.endsWith(":") ? `${head} ${rest.join("; ")}` : lines.join("; ");
}

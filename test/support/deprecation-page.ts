// The deprecation page read back through a DOM, the log command run as a user runs it, and the
// scenario both page tests play: callers of getPet on given days, one answer breaking the contract.
import assert from "node:assert/strict";
import { parseHTML } from "linkedom";
import type { DeprecationReport } from "../../policies/lifecycle/deprecation-report.ts";
import { contractAnswer } from "../fixtures/contract-answer.ts";
import { type Behaviour, jsonAnswer, type RecordedRequest } from "../fixtures/programmable-backend.ts";
import { request } from "./http.ts";
import { type ProgramRun, runProgram } from "./processes.ts";

/** The backend inside the contract, but for animal 13, whose category is `categoryId` (a string). */
export function contractBrokenForPet13(categoryId: string): (req: RecordedRequest) => Behaviour {
  return (req) =>
    req.url === "/v1/pets/13"
      ? jsonAnswer(200, JSON.stringify({ id: 13, name: "Rex", categoryId }))
      : contractAnswer(req);
}

/** A call of getPet by `consumer` at `iso` (the gateway's clock set first), answered 200. */
export function deprecatedCaller(
  gatewayUrl: () => string,
  keyOf: (consumer: string) => string,
  setClock: (iso: string) => void,
): (consumer: string, iso: string, userAgent: string, pet?: number) => Promise<void> {
  return async (consumer, iso, userAgent, pet = 1) => {
    setClock(iso);
    const answer = await request(`${gatewayUrl()}/pets/${pet}`, {
      key: keyOf(consumer),
      headers: { "user-agent": userAgent },
    });
    assert.equal(answer.status, 200);
  };
}

const at = (iso: string) => Date.parse(iso);

/** What a page shows, read back through the DOM: one entry per operation. */
export function pageFigures(html: string) {
  const { document } = parseHTML(html);
  return [...document.querySelectorAll("main > section[aria-labelledby^='operation-']")].map((section) => ({
    operation: section.querySelector("h2 .muted")?.textContent?.replace(/^\(|\)$/g, ""),
    calls: Number(section.querySelector("dd.calls")?.textContent),
    daysToSunset: Number(section.querySelector(".days-left")?.textContent),
    calling: Number(section.querySelector("dd.calling")?.textContent),
    quiet: Number(section.querySelector("dd.quiet-count")?.textContent),
    callers: [...section.querySelectorAll("table.calling tbody tr, table.quiet tbody tr")].map((row) => {
      const times = row.querySelectorAll("td time");
      return {
        consumer: row.querySelector(".name")?.textContent,
        firstSeen: times[0]?.getAttribute("datetime"),
        lastSeen: times[1]?.getAttribute("datetime"),
        calls: Number(row.querySelector("td.n")?.textContent),
        lastUserAgent: row.querySelector("td.agent")?.textContent,
      };
    }),
  }));
}

/**
 * The figures of the JSON report the page must repeat (an empty user agent shows as "(none)"):
 * quiet are the callers with no call in `quietDays` before `asOf` (the logs' end for the log command).
 */
export function jsonFigures(report: DeprecationReport, quietDays = 14, asOf = report.generatedAt) {
  const end = at(asOf);
  return report.operations.map((section) => {
    const quiet = section.callers.filter((row) => end - at(row.lastSeen) > quietDays * 86_400_000);
    return {
      operation: section.operation,
      calls: section.calls,
      daysToSunset: section.daysToSunset,
      calling: section.callers.length - quiet.length,
      quiet: quiet.length,
      callers: section.callers.map((row) => ({ ...row, lastUserAgent: row.lastUserAgent || "(none)" })),
    };
  });
}

/** `npm run deprecation-report -- args` with the lines on stdin. */
export function runReportCommand(args: readonly string[], lines: readonly string[]): Promise<ProgramRun> {
  return runProgram(["scripts/deprecation-report.ts", ...args], { stdin: `${lines.join("\n")}\n` });
}

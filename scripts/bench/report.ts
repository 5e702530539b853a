// The report: tables on stdout as the scenarios finish, and the dated JSON file of the whole run.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { ROOT } from "./context.ts";
import type { MustDoCosts } from "./must-do.ts";
import type { RssResult, ScenarioResult } from "./scenarios.ts";

export const RESULTS_DIR = join(ROOT, "bench", "results");

export const fmt = (value: number | undefined, digits: number) =>
  value === undefined || !Number.isFinite(value) ? "-" : value.toFixed(digits);
const thousands = (value: number) =>
  Number.isFinite(value) ? Math.round(value).toLocaleString("en-US") : "-";

export function printScenario(result: ScenarioResult): void {
  const lines = [
    "",
    `${result.title}`,
    `  ${result.request}, ${result.connections} connections${result.rate ? ` at ${result.rate} req/s` : ""}, ${result.rounds} rounds x ${result.durationS} s, ${result.loader}`,
    `  ${"target".padEnd(20)}${"req/s".padStart(10)}${"p50 ms".padStart(9)}${"p99 ms".padStart(9)}${"cpu us/req".padStart(12)}`,
  ];
  for (const [name, f] of Object.entries(result.targets)) {
    lines.push(
      `  ${name.padEnd(20)}${thousands(f.rps).padStart(10)}${fmt(f.p50, 2).padStart(9)}${fmt(f.p99, 2).padStart(9)}${fmt(f.cpuUs, 0).padStart(12)}`,
    );
  }
  for (const [name, f] of Object.entries(result.targets)) {
    if (f.cpuPartsUs === undefined) continue;
    const split = Object.entries(f.cpuPartsUs).map(([part, us]) => `${part} ${fmt(us, 0)}`);
    lines.push(`  ${name} cpu us/req by party: ${split.join(", ")}`);
  }
  if (result.mustDoUs !== undefined) lines.push(`  must-do work alone: ${fmt(result.mustDoUs, 2)} us/req`);
  for (const [name, value] of Object.entries(result.ratios)) lines.push(`  ${name}: ${fmt(value, 3)}`);
  for (const verdict of result.verdicts) lines.push(`  ${verdict}`);
  process.stdout.write(`${lines.join("\n")}\n`);
}

export function printRss(result: RssResult): void {
  const lines = [
    "",
    `RSS under ${result.connections} open keep-alive connections (${result.rate} req/s spread over them for ${result.durationS} s, after ${result.durationS} s at full speed; fresh processes)`,
    `  ${"target".padEnd(36)}${"start MB".padStart(9)}${"loaded MB".padStart(10)}${"peak MB".padStart(9)}${"open fds".padStart(10)}`,
  ];
  for (const [name, f] of Object.entries(result.targets)) {
    lines.push(
      `  ${name.padEnd(36)}${fmt(f.startMB, 1).padStart(9)}${fmt(f.loadedMB, 1).padStart(10)}${fmt(f.peakMB, 1).padStart(9)}${String(f.peakOpenFiles ?? "-").padStart(10)}`,
    );
  }
  for (const verdict of result.verdicts) lines.push(`  ${verdict}`);
  process.stdout.write(`${lines.join("\n")}\n`);
}

export function printMustDo(costs: MustDoCosts): void {
  const pieces = [...new Set(Object.values(costs).flatMap((c) => Object.keys(c)))];
  const lines = [
    "",
    "Work a request cannot skip, measured alone in a quiet process (us/request, scripts/bench/must-do.ts)",
    `  ${"scenario".padEnd(10)}${pieces.map((p) => p.padStart(15)).join("")}${"total".padStart(9)}`,
  ];
  for (const [id, c] of Object.entries(costs)) {
    const total = Object.values(c).reduce((sum, us) => sum + us, 0);
    lines.push(
      `  ${id.padEnd(10)}${pieces.map((p) => fmt(c[p], 2).padStart(15)).join("")}${fmt(total, 2).padStart(9)}`,
    );
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

export function gitCommit(): string | undefined {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "ignore"],
    })
      .toString()
      .trim();
  } catch {
    return undefined;
  }
}

export function machine() {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model ?? "unknown",
    cores: os.availableParallelism(),
    memoryGB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    loadAverage: os.loadavg().map((l) => Number(l.toFixed(2))),
  };
}

/** A UTC timestamp usable in a file name: 2026-11-23T22-21-28Z. */
export const fileStamp = (date: Date): string =>
  date
    .toISOString()
    .replaceAll(":", "-")
    .replace(/\.\d+Z$/, "Z");

/** Writes bench/results/<start time>.json; returns its path. Results are dated files, never rewritten. */
export function writeResults(started: number, record: Record<string, unknown>): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${fileStamp(new Date(started))}.json`);
  writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
  return file;
}

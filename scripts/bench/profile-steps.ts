// The hot path, accounted for: every sample of a V8 .cpuprofile put on one step of a request
// (canonical request, routing, each policy, forward, the upstream client, the answer check, …) by
// the committed table scripts/bench/profile-steps.json, so that the steps' rows sum to the busy
// time and whatever the table does not name shows as unmapped, never dropped. The table goes in
// docs/performance.md between markers this module rewrites (`npm run bench -- --profile`).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CpuProfile } from "./profile-summary.ts";

export const STEPS_FILE = join(import.meta.dirname, "profile-steps.json");
export const BEGIN_MARKER = "<!-- profile-table:begin (npm run bench -- --profile rewrites this block) -->";
export const END_MARKER = "<!-- profile-table:end -->";
export const UNMAPPED = "unmapped";

export interface StepTable {
  readonly frames: Readonly<Record<string, string>>;
  readonly leaves: Readonly<Record<string, string>>;
  readonly paths: Readonly<Record<string, string>>;
}

export function readStepTable(file = STEPS_FILE): StepTable {
  const table = JSON.parse(readFileSync(file, "utf8")) as StepTable;
  return table;
}

/**
 * A frame's path from the repository's root: `src/x.ts` (also when it ran from dist/ as .js),
 * `node_modules/NAME/…`, `node:…`, `wasm://…`; "" for a native function.
 */
export function framePath(url: string, root: string): string {
  if (url === "") return "";
  const modules = url.lastIndexOf("/node_modules/");
  if (modules !== -1) return url.slice(modules + 1);
  const prefix = `file://${root}/`;
  if (url.startsWith(prefix)) {
    const path = url.slice(prefix.length);
    return path.startsWith("dist/") ? path.slice("dist/".length).replace(/\.js$/, ".ts") : path;
  }
  return url;
}

/** A policy's own folder: policies/NAME/… */
const POLICY_FOLDER = /^policies\/([^/]+)\//;

/**
 * The rule for a path: the longest prefix in the table; else, for a file in a policy's folder,
 * "policy NAME", so that a new policy needs no line here; else undefined.
 */
export function ruleFor(table: StepTable, path: string): string | undefined {
  let best: string | undefined;
  for (const prefix in table.paths) {
    if (path.startsWith(prefix) && (best === undefined || prefix.length > best.length)) best = prefix;
  }
  if (best !== undefined) return table.paths[best];
  const policy = POLICY_FOLDER.exec(path)?.[1];
  return policy === undefined ? undefined : `policy ${policy}`;
}

interface Node {
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly parent: number | undefined;
}

export interface StepAccount {
  /** Self time by step, milliseconds; unmapped samples under UNMAPPED. */
  readonly steps: ReadonlyMap<string, number>;
  /** The paths that had no rule, milliseconds: what to add to the table. */
  readonly unmappedPaths: ReadonlyMap<string, number>;
  readonly busyMs: number;
}

export function accountSteps(profile: CpuProfile, root: string, table: StepTable): StepAccount {
  const nodes = new Map<number, Node>();
  const parents = new Map<number, number>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parents.set(child, node.id);
  }
  for (const node of profile.nodes)
    nodes.set(node.id, { callFrame: node.callFrame, parent: parents.get(node.id) });
  // The step of a stack depends only on its leaf node: computed once per node.
  const stepOfNode = new Map<number, { step: string; unmapped?: string }>();
  const resolve = (leaf: number): { step: string; unmapped?: string } => {
    const known = stepOfNode.get(leaf);
    if (known) return known;
    let fallback: string | undefined;
    let result: { step: string; unmapped?: string } | undefined;
    const leafFrame = (nodes.get(leaf) as Node).callFrame;
    // Own keys only: a native function named toString is not the table's Object.prototype.toString.
    const name = leafFrame.functionName;
    if (Object.hasOwn(table.frames, name)) result = { step: table.frames[name] as string };
    // A native leaf named in the table (a write syscall) is its own kind of row, one per step
    // that made it: the write of an answer to the client is not the log's write to stdout.
    const leafStep =
      leafFrame.url === "" && Object.hasOwn(table.leaves, name) ? table.leaves[name] : undefined;
    for (let id: number | undefined = leaf; result === undefined && id !== undefined; ) {
      const node = nodes.get(id) as Node;
      const path = framePath(node.callFrame.url, root);
      if (path !== "") {
        const rule = ruleFor(table, path);
        if (rule === undefined) result = { step: UNMAPPED, unmapped: path };
        else if (!rule.startsWith("^")) result = { step: rule };
        else fallback ??= rule.slice(1);
      }
      id = node.parent;
    }
    result ??=
      fallback === undefined
        ? { step: UNMAPPED, unmapped: `(native) ${leafFrame.functionName}` }
        : { step: fallback };
    if (leafStep !== undefined) result = { ...result, step: `${leafStep}: ${result.step}` };
    stepOfNode.set(leaf, result);
    return result;
  };
  const steps = new Map<string, number>();
  const unmappedPaths = new Map<string, number>();
  let busyMs = 0;
  // timeDeltas[i] is the time before sample i; the time after it is what sample i stands for.
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i] as number;
    const node = nodes.get(id);
    if (!node || node.callFrame.functionName === "(idle)") continue;
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    busyMs += ms;
    const { step, unmapped } = resolve(id);
    steps.set(step, (steps.get(step) ?? 0) + ms);
    if (unmapped !== undefined) unmappedPaths.set(unmapped, (unmappedPaths.get(unmapped) ?? 0) + ms);
  }
  return { steps, unmappedPaths, busyMs };
}

export interface StepTableContext {
  readonly requests: number;
  /** CPU per request the load measured (from the process's CPU time), for comparison. */
  readonly measuredCpuUs?: number | undefined;
  readonly when: string;
  readonly command: string;
  readonly machine: string;
}

/** The table as Markdown: rows by µs per request, largest first, and the total they sum to. */
export function formatStepTable(account: StepAccount, context: StepTableContext): string {
  const us = (ms: number) => (ms * 1000) / context.requests;
  const rows = [...account.steps].sort((a, b) => b[1] - a[1]);
  // Rounded rows must add up to the stated total: the total is the sum of the rounded rows.
  const rounded = rows.map(([step, ms]) => [step, Number(us(ms).toFixed(2))] as const);
  const total = rounded.reduce((sum, [, value]) => sum + value, 0);
  const lines = [
    `Self time of the gateway process under list20 load, ${context.when}: ${context.requests} requests, ${total.toFixed(2)} µs of profiled CPU per request${context.measuredCpuUs === undefined ? "" : ` (the load's own CPU measure, without the profiler: ${context.measuredCpuUs.toFixed(0)} µs)`}. ${context.machine}`,
    "",
    `Command: \`${context.command}\`. Steps by scripts/bench/profile-steps.json.`,
    "",
    "| step | µs per request | share |",
    "|---|---:|---:|",
    ...rounded.map(
      ([step, value]) => `| ${step} | ${value.toFixed(2)} | ${((value / total) * 100).toFixed(1)} % |`,
    ),
    `| **total** | **${total.toFixed(2)}** | 100 % |`,
  ];
  if (account.unmappedPaths.size > 0) {
    const top = [...account.unmappedPaths].sort((a, b) => b[1] - a[1]).slice(0, 5);
    lines.push("", `Unmapped: ${top.map(([path, ms]) => `${path} ${us(ms).toFixed(2)} µs`).join(", ")}.`);
  }
  return `${lines.join("\n")}\n`;
}

/** The rows of a committed table and its stated total, for the test that they add up. */
export function parseStepTable(markdown: string): { rows: number[]; total: number } {
  const rows: number[] = [];
  let total = Number.NaN;
  for (const line of markdown.split("\n")) {
    const match = /^\| (.+?) \| \**([0-9.]+)\** \|/.exec(line);
    if (!match) continue;
    if (match[1] === "**total**") total = Number(match[2]);
    else rows.push(Number(match[2]));
  }
  return { rows, total };
}

/** The block between the markers of a document, or undefined when it has none. */
export function markedBlock(document: string): string | undefined {
  const begin = document.indexOf(BEGIN_MARKER);
  const end = document.indexOf(END_MARKER);
  if (begin === -1 || end < begin) return undefined;
  return document.slice(begin + BEGIN_MARKER.length, end);
}

export function rewriteMarkedBlock(file: string, table: string): void {
  const document = readFileSync(file, "utf8");
  const begin = document.indexOf(BEGIN_MARKER);
  const end = document.indexOf(END_MARKER);
  if (begin === -1 || end < begin) throw new Error(`${file} has no ${BEGIN_MARKER} … ${END_MARKER} block`);
  writeFileSync(file, `${document.slice(0, begin + BEGIN_MARKER.length)}\n${table}${document.slice(end)}`);
}

if (import.meta.main) {
  // node scripts/bench/profile-steps.ts FILE.cpuprofile REQUESTS: the table, printed.
  const [file, requests] = process.argv.slice(2);
  if (!file || !requests) throw new Error("usage: profile-steps.ts FILE.cpuprofile REQUESTS");
  const account = accountSteps(
    JSON.parse(readFileSync(file, "utf8")) as CpuProfile,
    process.cwd(),
    readStepTable(),
  );
  process.stdout.write(
    formatStepTable(account, { requests: Number(requests), when: file, command: "", machine: "" }),
  );
}

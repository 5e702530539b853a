// Where a process's time went, from a V8 .cpuprofile (node --cpu-prof): the functions with the
// most self time, the same grouped by module, and the inclusive time of the project's own
// functions (src/, policies/), so that a hot spot can be named with evidence.
//   node scripts/bench/profile-summary.ts FILE.cpuprofile [--top 30]

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}
export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
  readonly startTime: number;
  readonly endTime: number;
}

export interface Row {
  readonly name: string;
  readonly ms: number;
  /** Share of the busy time (idle excluded). */
  readonly share: number;
}

export interface ProfileSummary {
  readonly busyMs: number;
  readonly idleMs: number;
  /** Milliseconds by function ("name file:line"), module, and project function (inclusive). */
  readonly selfByFunction: ReadonlyMap<string, number>;
  readonly selfByModule: ReadonlyMap<string, number>;
  readonly inclusiveProjectFunctions: ReadonlyMap<string, number>;
}

const PROJECT = /\/(src|policies|scripts)\/[^/]+\.ts$/;

function shortUrl(url: string): string {
  if (url === "") return "";
  const modules = url.lastIndexOf("/node_modules/");
  if (modules !== -1) return url.slice(modules + "/node_modules/".length);
  const project = PROJECT.exec(url);
  if (project) return project[0].slice(1);
  return url.replace(/^file:\/\//, "");
}

function moduleOf(frame: CallFrame): string {
  const url = frame.url;
  if (url === "") return frame.functionName.startsWith("(") ? frame.functionName : "(native)";
  if (url.startsWith("node:")) return "node internals";
  const modules = url.lastIndexOf("/node_modules/");
  if (modules !== -1) {
    const rest = url.slice(modules + "/node_modules/".length).split("/");
    return rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  return shortUrl(url);
}

function functionKey(frame: CallFrame): string {
  const name = frame.functionName || "(anonymous)";
  return frame.url === "" ? name : `${name} ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
}

function rows(totals: ReadonlyMap<string, number>, busyMs: number, top: number): Row[] {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, ms]) => ({ name, ms, share: ms / busyMs }));
}

export function summarizeProfile(profile: CpuProfile): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const selfFunction = new Map<string, number>();
  const selfModule = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let idleMs = 0;
  let busyMs = 0;
  // timeDeltas[i] is the time before sample i; the time after it is what sample i stands for.
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i] as number);
    if (!node) continue;
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const frame = node.callFrame;
    if (frame.functionName === "(idle)") {
      idleMs += ms;
      continue;
    }
    busyMs += ms;
    const key = functionKey(frame);
    selfFunction.set(key, (selfFunction.get(key) ?? 0) + ms);
    const module = moduleOf(frame);
    selfModule.set(module, (selfModule.get(module) ?? 0) + ms);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const callFrame = (byId.get(id) as ProfileNode).callFrame;
      if (!PROJECT.test(callFrame.url)) continue;
      const name = functionKey(callFrame);
      if (seen.has(name)) continue;
      seen.add(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + ms);
    }
  }
  return {
    busyMs,
    idleMs,
    selfByFunction: selfFunction,
    selfByModule: selfModule,
    inclusiveProjectFunctions: inclusive,
  };
}

/** requests: how many requests the process answered while profiled, for microseconds per request. */
export function formatProfileSummary(
  title: string,
  summary: ProfileSummary,
  top: number,
  requests?: number,
): string {
  const perRequest = (ms: number) =>
    requests ? `${((ms * 1000) / requests).toFixed(2).padStart(7)} us/req  ` : "";
  const table = (heading: string, totals: ReadonlyMap<string, number>, count = top) => [
    `  ${heading}`,
    ...rows(totals, summary.busyMs, count).map(
      (row) =>
        `    ${(row.share * 100).toFixed(1).padStart(5)}%  ${row.ms.toFixed(0).padStart(7)} ms  ${perRequest(row.ms)}${row.name}`,
    ),
  ];
  return `${[
    `CPU profile: ${title}`,
    `  busy ${summary.busyMs.toFixed(0)} ms, idle ${summary.idleMs.toFixed(0)} ms${requests ? `, ${requests} requests, busy ${perRequest(summary.busyMs).trim()}` : ""}`,
    ...table("self time by function", summary.selfByFunction),
    ...table("self time by module", summary.selfByModule, 15),
    ...table("inclusive time of the project's functions", summary.inclusiveProjectFunctions),
  ].join("\n")}\n`;
}

/**
 * Self time per request that one process (the gateway) spends beyond another (the bare proxy),
 * by function and by module: where the gateway's extra cost goes.
 */
export function formatProfileDifference(
  title: string,
  a: { summary: ProfileSummary; requests: number },
  b: { summary: ProfileSummary; requests: number },
  top: number,
): string {
  const difference = (pick: (s: ProfileSummary) => ReadonlyMap<string, number>) => {
    const names = new Set([...pick(a.summary).keys(), ...pick(b.summary).keys()]);
    return [...names]
      .map((name) => {
        const x = ((pick(a.summary).get(name) ?? 0) * 1000) / a.requests;
        const y = ((pick(b.summary).get(name) ?? 0) * 1000) / b.requests;
        return { name, x, y, delta: x - y };
      })
      .sort((p, q) => q.delta - p.delta);
  };
  const table = (heading: string, list: ReturnType<typeof difference>, count: number) => [
    `  ${heading}  (us/req: first, second, difference)`,
    ...list
      .slice(0, count)
      .map(
        (row) =>
          `    ${row.x.toFixed(2).padStart(7)} ${row.y.toFixed(2).padStart(7)} ${(row.delta >= 0 ? "+" : "") + row.delta.toFixed(2).padStart(6)}  ${row.name}`,
      ),
  ];
  const busy = (s: { summary: ProfileSummary; requests: number }) => (s.summary.busyMs * 1000) / s.requests;
  return `${[
    `CPU per request, ${title}: ${busy(a).toFixed(1)} us against ${busy(b).toFixed(1)} us (+${(busy(a) - busy(b)).toFixed(1)} us)`,
    ...table(
      "by module",
      difference((s) => s.selfByModule),
      15,
    ),
    ...table(
      "by function (self time)",
      difference((s) => s.selfByFunction),
      top,
    ),
  ].join("\n")}\n`;
}

if (import.meta.main) {
  const { readFileSync } = await import("node:fs");
  const { parseArgs } = await import("node:util");
  const { values, positionals } = parseArgs({
    options: { top: { type: "string", default: "30" } },
    allowPositionals: true,
  });
  for (const file of positionals) {
    const summary = summarizeProfile(JSON.parse(readFileSync(file, "utf8")) as CpuProfile);
    process.stdout.write(formatProfileSummary(file, summary, Number(values.top)));
  }
}

// The benchmark anyone can re-run: what the gateway, with every policy on, costs over a bare
// http-proxy-3 proxy with the same upstream agent, measured in the same run.
//
//   npm run bench                 # the full run, under five minutes
//   npm run bench -- --quick      # about a minute
//   npm run bench -- --only tracing   # tracing off, at 0.01 and at 1.0 on list20, each exporting to a
//                                     # live receiver; VOID unless every traced request's spans arrived
//   npm run bench -- --profile    # gateway and bare proxy under --cpu-prof; prints the hot spots
//                                 # (--only rate: at the fixed rate instead)
//                                 # (--baseline bare-check: against the proxy that only checks answers;
//                                 # --baseline bare-must: against the one doing only the must-do work)
//
// Every party is a process of its own, on loopback: a static backend serving the demo backend's
// answers, the bare proxy, the gateway (as `npm start` runs it), nginx when installed (on the
// 20-animal page only: the reference for what a proxy can do at all), and the load
// generator (wrk when installed, else autocannon in a child process). Targets take turns in
// rounds (A B C, then C B A, ...) so that drift of a shared machine hits them alike; each figure
// is the median of its rounds, and each ratio the median of the per-round ratios. Before the
// rounds, scripts/bench/must-do.ts measures alone the work no gateway with these policies can skip
// (parsing and checking the answer, the key's digest, a histogram, an access line): with the bare
// proxy's CPU per request it gives each scenario's ceiling, the best gateway/bare reachable at all.
// The page scenarios also run "bare-check": the bare proxy holding and checking every answer as
// enforce mode must, and nothing else; and "bare-must": the same proxy doing also the rest of the
// must-do work (the key's digest, the `limit` default, a deadline, a histogram, an access line to
// /dev/null). Their ratios to the bare proxy are those bounds, measured.
// Decision mode (issue 31), when nginx is installed: on list20 and getPet, "nginx-decision" is
// Debian's nginx with the config `npm run proxy-config -- nginx` generates, asking the gateway in
// decision mode, and "nginx-check" the same nginx asking the least possible check
// (scripts/bench/nginx-check.ts), beside the gateway with the contract off; their CPU per request
// is nginx's (master and workers) plus the decision service's. "decision-rate" sends a fixed
// 1,000 decisions/s (open loop) through nginx-decision and reads the decision's p99 from its own
// access lines.
// Other flags: --rounds N --duration S --connections N --rate N --loader wrk|autocannon
// --backend static|demo --no-nginx --only list20,list100,create,getPet,keys,patterns,rate,decision-rate,rss,tracing
// (tracing only when named)
// --compare GIT_REF: also runs the gateway as it was at GIT_REF, as one more target in the same
// rounds, so that a change to the gateway is measured against its predecessor on equal terms.
// --compare-flags="NODE FLAGS": the same, for the gateway of this tree started with other Node
// flags (e.g. "--max-semi-space-size=8").
// --targets direct,nginx,bare,bare-check,bare-must,bare-undici,must-undici,fastify,gateway,gateway-report-0.1,gateway-nocontract,nginx-decision,nginx-check,compare: run only these targets in
// the throughput and fixed-rate scenarios (an A/B of two gateways: --targets gateway,compare).
// nginx-decision-unlogged runs only when named: nginx-decision with the decision service at
// LOG_LEVEL=warn, no log line per decision, to tell what those lines cost the pair.
//
// This file reads the flags; scripts/bench/main.ts runs the benchmark, with the targets
// (targets.ts), the load generators (load.ts), the rounds (runner.ts), the statistics (stats.ts),
// the scenarios (scenarios.ts) and the report (report.ts) in modules of their own.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  ALL_SCENARIOS,
  ALL_TARGETS,
  type Baseline,
  DEFAULT_SCENARIOS,
  type Options,
  PRESETS,
  ROOT,
  type Settings,
} from "./bench/context.ts";
import { main } from "./bench/main.ts";
import { shutDown } from "./bench/processes.ts";

const USAGE = `usage: npm run bench -- [--quick] [--profile [--baseline bare|bare-check|bare-must]]
  [--only list20,list100,create,getPet,keys,patterns,rate,decision-rate,rss,tracing]
  [--targets direct,nginx,bare,bare-check,bare-must,bare-undici,must-undici,fastify,gateway,gateway-report-0.1,gateway-nocontract,nginx-decision,nginx-check,nginx-decision-unlogged,compare]
  [--compare GIT_REF | --compare-flags="NODE FLAGS"] [--rounds N] [--duration S] [--connections N] [--rate N]
  [--loader wrk|autocannon] [--backend static|demo] [--no-nginx]
See docs/performance.md.
`;

/** A mistyped option is the user's, not the benchmark's: one line and the usage, no stack trace. */
function refuseOption(message: string): never {
  process.stderr.write(`bench: ${message}\n${USAGE}`);
  process.exit(2);
}

function parseFlags() {
  try {
    return parseArgs({ options: OPTIONS, strict: true }).values;
  } catch (error) {
    return refuseOption((error as Error).message);
  }
}

const OPTIONS = {
  help: { type: "boolean", default: false },
  quick: { type: "boolean", default: false },
  profile: { type: "boolean", default: false },
  rounds: { type: "string" },
  duration: { type: "string" },
  connections: { type: "string" },
  rate: { type: "string" },
  loader: { type: "string" },
  backend: { type: "string", default: "static" },
  "no-nginx": { type: "boolean", default: false },
  only: { type: "string" },
  compare: { type: "string" },
  "compare-flags": { type: "string" },
  targets: { type: "string" },
  baseline: { type: "string", default: "bare" },
} as const;
const flags = parseFlags();
if (flags.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

function positive(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) refuseOption(`--${name} must be a positive integer`);
  return value;
}

const preset = PRESETS[flags.quick ? "quick" : "full"];
const settings: Settings = {
  ...preset,
  rounds: positive("rounds", flags.rounds, preset.rounds),
  durationS: positive("duration", flags.duration, preset.durationS),
  connections: positive("connections", flags.connections, preset.connections),
  rate: positive("rate", flags.rate, preset.rate),
};
const only = new Set<string>(flags.only ? flags.only.split(",") : DEFAULT_SCENARIOS);
for (const id of only) {
  if (!(ALL_SCENARIOS as readonly string[]).includes(id)) refuseOption(`--only: unknown scenario ${id}`);
}
const targetFilter = flags.targets ? new Set(flags.targets.split(",")) : undefined;
for (const name of targetFilter ?? []) {
  if (!ALL_TARGETS.includes(name)) refuseOption(`--targets: unknown target ${name}`);
}
if (flags.compare && flags["compare-flags"]) refuseOption("--compare and --compare-flags: one at a time");
/** The commit --compare names, resolved before anything starts. */
const comparedCommit = flags.compare === undefined ? undefined : resolveCommit(flags.compare);

function resolveCommit(ref: string): string {
  if (!/^[\w./@^~-]+$/.test(ref)) refuseOption(`--compare: not a git ref: ${ref}`);
  try {
    return execFileSync("git", ["rev-parse", "--short", `${ref}^{commit}`], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "ignore"],
    })
      .toString()
      .trim();
  } catch {
    return refuseOption(`--compare: ${ref} names no commit of this repository`);
  }
}

function onPath(command: string): string | undefined {
  for (const dir of [...(process.env.PATH ?? "").split(":"), "/usr/sbin", "/usr/local/sbin"]) {
    const candidate = join(dir, command);
    if (dir !== "" && existsSync(candidate)) return candidate;
  }
  return undefined;
}
const wrkPath = onPath("wrk");
const nginxPath = flags["no-nginx"] ? undefined : onPath("nginx");
if (flags.loader !== undefined && flags.loader !== "wrk" && flags.loader !== "autocannon") {
  refuseOption("--loader must be wrk or autocannon");
}
if (flags.loader === "wrk" && !wrkPath) refuseOption("--loader wrk: wrk is not installed");
const loader: "wrk" | "autocannon" = (flags.loader ?? (wrkPath ? "wrk" : "autocannon")) as
  | "wrk"
  | "autocannon";
if (!["bare", "bare-check", "bare-must"].includes(flags.baseline))
  refuseOption("--baseline must be bare, bare-check or bare-must");
if (flags.backend !== "static" && flags.backend !== "demo") refuseOption("--backend must be static or demo");

const options: Options = {
  preset: flags.quick ? "quick" : "full",
  settings,
  profile: flags.profile,
  loader,
  wrkPath,
  nginxPath,
  backend: flags.backend as "static" | "demo",
  baseline: flags.baseline as Baseline,
  only,
  onlyGiven: flags.only !== undefined,
  targets: targetFilter,
  comparedCommit,
  compareFlags: flags["compare-flags"]?.split(/\s+/).filter((flag) => flag !== ""),
};

main(options)
  .then(() => {
    shutDown();
    process.exit(0);
  })
  .catch((error: unknown) => {
    process.stderr.write(`\nbench: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  });

// What one benchmark run knows: the settings its flags chose, the tools found on this machine,
// its scratch directory, and what the scenarios learn as they go.
import { resolve } from "node:path";
import type { MustDoCosts } from "./must-do.ts";

export const ROOT = resolve(import.meta.dirname, "../..");

export const ALL_SCENARIOS = [
  "list20",
  "list100",
  "create",
  "getPet",
  "keys",
  "patterns",
  "rate",
  "decision-rate",
  "rss",
  "tracing",
] as const;
export type ScenarioId = (typeof ALL_SCENARIOS)[number];
/**
 * What a run without --only measures: all but tracing, which starts three more gateways and two
 * receivers and is asked for by name (--only tracing), so the full run stays under five minutes.
 */
export const DEFAULT_SCENARIOS: readonly ScenarioId[] = ALL_SCENARIOS.filter((id) => id !== "tracing");
export const ALL_TARGETS = [
  "direct",
  "nginx",
  "bare",
  "bare-check",
  "bare-must",
  "bare-undici",
  "must-undici",
  "fastify",
  "gateway",
  "gateway-report-0.1",
  "gateway-nocontract",
  "nginx-decision",
  "nginx-check",
  "nginx-decision-unlogged",
  "compare",
];
/**
 * Targets that run only when --targets names them: diagnostics, not references a verdict reads.
 * nginx-decision-unlogged is nginx-decision with the decision service at LOG_LEVEL=warn (no access
 * line, no deprecated-call line): how much of the pair's cost the log lines issue 31 asks for are.
 */
export const NAMED_ONLY_TARGETS: readonly string[] = ["nginx-decision-unlogged"];
export type Baseline = "bare" | "bare-check" | "bare-must";

export interface Settings {
  readonly rounds: number;
  /** Seconds per measured run (wrk takes whole seconds). */
  readonly durationS: number;
  /** Seconds of discarded load per target before a scenario's rounds. */
  readonly warmupS: number;
  /** Warm each target up only before the first scenario it takes part in. */
  readonly warmupOnce: boolean;
  readonly connections: number;
  /** Requests per second of the fixed-rate scenario. */
  readonly rate: number;
  readonly rateRounds: number;
  readonly rateDurationS: number;
  readonly rssConnections: number;
  readonly rssDurationS: number;
}

export const PRESETS: Record<"full" | "quick", Settings> = {
  full: {
    rounds: 4,
    durationS: 2,
    warmupS: 1,
    warmupOnce: false,
    connections: 50,
    rate: 2000,
    rateRounds: 3,
    rateDurationS: 2,
    rssConnections: 1000,
    rssDurationS: 3,
  },
  quick: {
    rounds: 2,
    durationS: 1,
    warmupS: 1,
    warmupOnce: true,
    connections: 50,
    rate: 2000,
    rateRounds: 2,
    rateDurationS: 1,
    rssConnections: 1000,
    rssDurationS: 1,
  },
};

/** What the command line asked for, checked: scripts/bench.ts makes it. */
export interface Options {
  readonly preset: "full" | "quick";
  readonly settings: Settings;
  readonly profile: boolean;
  readonly loader: "wrk" | "autocannon";
  readonly wrkPath: string | undefined;
  readonly nginxPath: string | undefined;
  readonly backend: "static" | "demo";
  readonly baseline: Baseline;
  /** The scenarios to run; `onlyGiven`: named with --only (a profile then runs the rate too). */
  readonly only: ReadonlySet<string>;
  readonly onlyGiven: boolean;
  /** --targets, when given. */
  readonly targets: ReadonlySet<string> | undefined;
  /** The commit --compare names, resolved before anything starts. */
  readonly comparedCommit: string | undefined;
  readonly compareFlags: readonly string[] | undefined;
}

export interface Bench extends Options {
  /** This run's scratch directory (configs, key files, wrk scripts), removed when the process exits. */
  readonly work: string;
  /** The name of the --compare gateway target, once it runs. */
  compared: string | undefined;
  /** The work each scenario's requests cannot skip, measured alone (scripts/bench/must-do.ts). */
  mustDo: MustDoCosts | undefined;
  /** Requests each target answered, warm-up included: the denominator of a profile's per-request times. */
  readonly answered: Map<string, number>;
  /** Targets already warmed up (with --quick, only before their first scenario). */
  readonly warmed: Set<string>;
}

export const wanted = (bench: Options, id: ScenarioId): boolean => bench.only.has(id);
export const chosen = (bench: Options, name: string): boolean =>
  bench.targets === undefined ? !NAMED_ONLY_TARGETS.includes(name) : bench.targets.has(name);

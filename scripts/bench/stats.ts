// Statistics: each figure is the median of its rounds, each ratio the median of the per-round
// ratios (targets take turns within a round, so drift of a shared machine hits them alike).
import type { LoadResult } from "./load-worker.ts";

export interface Measured extends LoadResult {
  /** CPU time the target's own processes spent per answered request, in microseconds. */
  readonly cpuUs: number | undefined;
  /** The same per party, for a target of several (Target.parts). */
  readonly cpuPartsUs?: Readonly<Record<string, number>>;
}

export interface TargetFigures {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly cpuUs: number | undefined;
  /** The median per party, for a target of several. */
  readonly cpuPartsUs?: Readonly<Record<string, number>>;
  readonly rounds: readonly Measured[];
}

export const median = (values: readonly number[]): number => {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

/** The p-th percentile of sorted values (nearest rank). */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}

export function figures(runs: Record<string, Measured[]>): Record<string, TargetFigures> {
  return Object.fromEntries(
    Object.entries(runs).map(([name, rounds]) => {
      const cpu = median(rounds.map((r) => r.cpuUs ?? Number.NaN));
      const partNames = [...new Set(rounds.flatMap((r) => Object.keys(r.cpuPartsUs ?? {})))];
      const cpuPartsUs = Object.fromEntries(
        partNames.map((part) => [part, median(rounds.map((r) => r.cpuPartsUs?.[part] ?? Number.NaN))]),
      );
      return [
        name,
        {
          rps: median(rounds.map((r) => r.rps)),
          p50: median(rounds.map((r) => r.p50)),
          p99: median(rounds.map((r) => r.p99)),
          cpuUs: Number.isNaN(cpu) ? undefined : cpu,
          ...(partNames.length === 0 ? {} : { cpuPartsUs }),
          rounds,
        },
      ];
    }),
  );
}

/** Median over rounds of f(a's run, b's run) for the runs of the same round. */
export function perRound(
  runs: Record<string, Measured[]>,
  a: string,
  b: string,
  f: (x: Measured, y: Measured) => number,
): number {
  const [xs, ys] = [runs[a], runs[b]];
  if (!xs || !ys) return Number.NaN;
  return median(xs.map((x, i) => (ys[i] ? f(x, ys[i]) : Number.NaN)));
}

export const rpsRatio = (x: Measured, y: Measured) => x.rps / y.rps;
export const cpuRatio = (x: Measured, y: Measured) =>
  x.cpuUs === undefined || y.cpuUs === undefined ? Number.NaN : x.cpuUs / y.cpuUs;

/** Below the target by more than this, a measured or modelled bound says "out of reach"; nearer, "at the edge". */
export const NOISE = 0.03;
/** Busier than this share of a core at the fixed rate, a target's p99 is mostly its queue. */
export const BUSY_QUEUEING = 0.6;
/** Rounds that read a measured bound firmly: with fewer, one noisy round moves bare-must/bare by more than NOISE. */
export const FIRM_ROUNDS = 16;

/**
 * What the bounds say of a target, tightest first: the measured ones (a proxy doing only the
 * must-do work; one only holding and checking each answer; both with the same http-proxy-3,
 * JSON.parse and ajv), then the modelled ceiling. Out of reach when one is below the target by
 * more than the noise.
 */
export function reachOf(
  goal: number,
  bounds: readonly [name: string, value: number | undefined, says: string][],
): string {
  const known = bounds.filter((bound): bound is [string, number, string] => Number.isFinite(bound[1]));
  const below = known.find(([, value]) => value < goal - NOISE);
  if (below) return `; out of reach: ${below[2]} ${below[1].toFixed(2)}`;
  if (known.length === 0) return "";
  const near = known.some(([, value]) => value < goal + NOISE);
  return `; ${near ? "at the edge" : "within reach"}: ${known.map(([name, value]) => `${name} ${value.toFixed(2)}`).join(", ")}`;
}

/** Rounds a target verdict is written for (issue 29): its median over this many per-round ratios. */
export const VERDICT_ROUNDS = 16;
/** A round counts for a target when its ratio is at least the target less this. */
export const ROUND_TOLERANCE = 0.05;
/** Share of the rounds that must count: 12 of 16. */
export const ROUNDS_WITHIN = 12 / 16;

/**
 * The verdict on "a/b ≥ goal" (or, `atMost`, "a/b ≤ goal", for a cost): met when the median of
 * the per-round ratios reaches the goal and at least 12 of 16 rounds (the same share of fewer) are
 * within 0.05 of it; with fewer than 16 rounds the verdict says so, since it is then no more than
 * a first look.
 */
export function targetVerdict(
  runs: Record<string, Measured[]>,
  a: string,
  b: string,
  goal: number,
  f: (x: Measured, y: Measured) => number = rpsRatio,
  label = `${a}/${b}`,
  atMost = false,
): string | undefined {
  const [xs, ys] = [runs[a], runs[b]];
  if (!xs || !ys) return undefined;
  const ratios = xs.map((x, i) => (ys[i] ? f(x, ys[i]) : Number.NaN)).filter((r) => Number.isFinite(r));
  if (ratios.length === 0) return undefined;
  const ratio = median(ratios);
  const edge = atMost ? goal + ROUND_TOLERANCE : goal - ROUND_TOLERANCE;
  const within = ratios.filter((r) => (atMost ? r <= edge : r >= edge)).length;
  const needed = Math.ceil(ROUNDS_WITHIN * ratios.length);
  const met = (atMost ? ratio <= goal : ratio >= goal) && within >= needed;
  const few =
    ratios.length < VERDICT_ROUNDS ? ` (only ${ratios.length} rounds: run ${VERDICT_ROUNDS} to judge)` : "";
  const sign = atMost ? "<=" : ">=";
  return `${met ? "MET" : "MISSED"}: ${label} ${ratio.toFixed(2)} (target ${sign} ${goal}; ${within} of ${ratios.length} rounds ${sign} ${edge.toFixed(2)}, ${needed} needed)${few}`;
}

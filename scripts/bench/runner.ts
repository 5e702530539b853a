// The runner: one measured run of a target (its CPU time read from /proc around the load), one
// request outside the load, and rounds in which the targets take turns, A B C then C B A.
import type { Bench } from "./context.ts";
import { autocannonRun, headersFor, type RequestSpec, wrkRun } from "./load.ts";
import { cpuMs } from "./processes.ts";
import type { Measured } from "./stats.ts";
import type { Target } from "./targets.ts";

export async function measure(
  bench: Bench,
  target: Target,
  spec: RequestSpec,
  load: { connections: number; durationS: number; rate?: number },
): Promise<Measured> {
  const pids = target.pids();
  const parts = Object.entries(target.parts?.() ?? {});
  const before = pids.map(cpuMs);
  const partsBefore = parts.map(([, own]) => own.map(cpuMs));
  const url = `${target.origin}${spec.path}`;
  const result =
    bench.loader === "wrk" && load.rate === undefined
      ? await wrkRun(bench, url, spec, load.connections, load.durationS, target.keys)
      : await autocannonRun({
          url,
          method: spec.method,
          headers: headersFor(spec),
          ...(target.keys === undefined || load.rate !== undefined ? {} : { keys: target.keys }),
          ...(spec.body === undefined ? {} : { body: spec.body }),
          connections: load.connections,
          durationS: load.durationS,
          ...(load.rate === undefined ? {} : { rate: load.rate }),
        });
  const after = pids.map(cpuMs);
  const partsAfter = parts.map(([, own]) => own.map(cpuMs));
  bench.answered.set(target.name, (bench.answered.get(target.name) ?? 0) + result.requests);
  const spent = spentMs(before, after);
  if (result.non2xx > 0 || result.errors > 0) {
    process.stderr.write(
      `bench: ${target.name} ${spec.method} ${spec.path}: ${result.non2xx} non-2xx answers, ${result.errors} errors\n`,
    );
  }
  const perRequest = (ms: number) =>
    Number.isNaN(ms) ? undefined : (ms * 1000) / Math.max(result.requests, 1);
  const cpuPartsUs: Record<string, number> = {};
  parts.forEach(([name], i) => {
    const us = perRequest(spentMs(partsBefore[i] ?? [], partsAfter[i] ?? []));
    if (us !== undefined) cpuPartsUs[name] = us;
  });
  return {
    ...result,
    cpuUs: perRequest(spent),
    ...(parts.length === 0 ? {} : { cpuPartsUs }),
  };
}

/** CPU milliseconds the processes spent between two readings; NaN when one is missing. */
function spentMs(before: readonly (number | undefined)[], after: readonly (number | undefined)[]): number {
  let spent = 0;
  for (let i = 0; i < before.length; i++) {
    const [a, b] = [after[i], before[i]];
    if (a === undefined || b === undefined) return Number.NaN;
    spent += a - b;
  }
  return spent;
}

/** One request of the scenario to the target, outside the measured load. */

/** One request of the scenario to the target, outside the measured load. */
export async function fetchOne(target: Target, spec: RequestSpec): Promise<{ status: number; body: Buffer }> {
  const response = await fetch(`${target.origin}${spec.path}`, {
    method: spec.method,
    headers: headersFor(spec),
    ...(spec.body === undefined ? {} : { body: spec.body }),
  });
  return { status: response.status, body: Buffer.from(await response.arrayBuffer()) };
}

/** One request to each target: the status is the expected one and the body the backend's own. */
export async function preflight(
  targets: readonly Target[],
  spec: RequestSpec,
  reference: Target,
): Promise<void> {
  const expected = await fetchOne(reference, spec);
  for (const target of targets) {
    const got = await fetchOne(target, spec);
    if (got.status !== spec.status || !sameAnswer(got.body, expected.body)) {
      throw new Error(
        `preflight: ${target.name} ${spec.method} ${spec.path} answered ${got.status} ${got.body.toString().slice(0, 200)}`,
      );
    }
  }
}

/**
 * The backend's own answer: the same bytes, or for a list (the backend serves its pages in turn,
 * scripts/bench/static-backend.ts) a JSON array of the same length.
 */
function sameAnswer(got: Buffer, expected: Buffer): boolean {
  if (got.equals(expected)) return true;
  try {
    const [a, b] = [JSON.parse(got.toString()), JSON.parse(expected.toString())];
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length;
  } catch {
    return false;
  }
}

export async function runRounds(
  bench: Bench,
  targets: readonly Target[],
  spec: RequestSpec,
  load: { connections: number; durationS: number; rate?: number },
  rounds: number,
  warmupS: number,
): Promise<Record<string, Measured[]>> {
  for (const target of targets) {
    if (warmupS === 0 || (bench.settings.warmupOnce && bench.warmed.has(target.name))) continue;
    await measure(bench, target, spec, { ...load, durationS: warmupS });
    bench.warmed.add(target.name);
  }
  const runs: Record<string, Measured[]> = Object.fromEntries(targets.map((t) => [t.name, []]));
  for (let round = 0; round < rounds; round++) {
    // Forward, then backward: no target always runs right after the same neighbour.
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    for (const target of order) runs[target.name]?.push(await measure(bench, target, spec, load));
    process.stderr.write(".");
  }
  return runs;
}

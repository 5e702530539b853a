// Work over data whose size clients decide (a report of every caller) done in slices, so that
// building it never holds the event loop for long: between slices, the probes, scrapes and
// requests that arrived meanwhile are served. A slice's budget is far below the 20 ms an ops
// request may hold the loop at most (docs/security.md).
import { setImmediate as nextTurn } from "node:timers/promises";

const SLICE_MS = 2;

export interface Slices {
  /** Whether the slice's time is spent: then `await next()` before the next item. */
  due(): boolean;
  /** Lets the loop turn once (I/O, timers), then starts a new slice. */
  next(): Promise<void>;
}

export function slices(budgetMs = SLICE_MS): Slices {
  let started = performance.now();
  return {
    due: () => performance.now() - started >= budgetMs,
    async next() {
      await nextTurn();
      started = performance.now();
    },
  };
}

/** Sorts `items` in place, in slices: a merge sort whose passes yield to the loop. */
export async function sortInSlices<T>(
  items: T[],
  compare: (a: T, b: T) => number,
  work: Slices = slices(),
): Promise<T[]> {
  const RUN = 64;
  // Short runs sorted by the engine, then merged pairwise, doubling the run each pass.
  for (let start = 0; start < items.length; start += RUN) {
    const run = items.slice(start, start + RUN).sort(compare);
    for (let i = 0; i < run.length; i++) items[start + i] = run[i] as T;
    if (work.due()) await work.next();
  }
  let from = items;
  let to = new Array<T>(items.length);
  for (let width = RUN; width < items.length; width *= 2) {
    for (let left = 0; left < items.length; left += 2 * width) {
      const middle = Math.min(left + width, items.length);
      const end = Math.min(left + 2 * width, items.length);
      let i = left;
      let j = middle;
      for (let k = left; k < end; k++) {
        // Stable: on a tie the left run's item goes first.
        if (i < middle && (j >= end || compare(from[i] as T, from[j] as T) <= 0)) to[k] = from[i++] as T;
        else to[k] = from[j++] as T;
        if ((k & 255) === 0 && work.due()) await work.next();
      }
    }
    [from, to] = [to, from];
  }
  if (from !== items) for (let k = 0; k < items.length; k++) items[k] = from[k] as T;
  return items;
}

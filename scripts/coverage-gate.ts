// The coverage gate: line coverage per directory of src/ and policies/, read from the lcov file
// `npm run test:coverage` writes, against the floors in test/coverage-floors.json. A directory
// below its floor fails; so does one with no floor (a new directory states its own). Floors only
// rise: `--raise` writes today's figures less half a point, rounded down to half a point (the
// margin for lines a race runs on one run and not the next), where they are above the floor.
//   node scripts/coverage-gate.ts coverage/lcov.info [--raise]
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

const FLOORS_FILE = join(import.meta.dirname, "../test/coverage-floors.json");

export interface DirectoryCoverage {
  readonly directory: string;
  readonly found: number;
  readonly hit: number;
}

/** Lines found and hit per directory, from lcov text (SF:, LF:, LH: records). */
export function coverageByDirectory(lcov: string): DirectoryCoverage[] {
  const totals = new Map<string, { found: number; hit: number }>();
  let directory = "";
  for (const line of lcov.split("\n")) {
    if (line.startsWith("SF:")) directory = dirname(line.slice(3).replaceAll("\\", "/"));
    else if (line.startsWith("LF:") || line.startsWith("LH:")) {
      const total = totals.get(directory) ?? { found: 0, hit: 0 };
      if (line.startsWith("LF:")) total.found += Number(line.slice(3));
      else total.hit += Number(line.slice(3));
      totals.set(directory, total);
    }
  }
  return [...totals]
    .map(([name, total]) => ({ directory: name, ...total }))
    .sort((a, b) => a.directory.localeCompare(b.directory));
}

export function percent({ found, hit }: DirectoryCoverage): number {
  return found === 0 ? 100 : (100 * hit) / found;
}

/** Each directory's verdict against its floor: the lines a report prints, and whether all passed. */
export function judgeCoverage(
  directories: readonly DirectoryCoverage[],
  floors: Readonly<Record<string, number>>,
): { lines: string[]; passed: boolean } {
  let passed = true;
  const lines = directories.map((entry) => {
    const figure = percent(entry);
    const floor = floors[entry.directory];
    const ok = floor !== undefined && figure >= floor;
    if (!ok) passed = false;
    const verdict =
      floor === undefined ? "no floor: add it to test/coverage-floors.json" : ok ? "ok" : "BELOW";
    return `${entry.directory.padEnd(36)} ${figure.toFixed(2).padStart(6)} %  floor ${floor?.toFixed(1) ?? "-"}  ${verdict}`;
  });
  return { lines, passed };
}

function main(args: readonly string[]): number {
  const [file, flag] = args;
  if (file === undefined) {
    console.error("usage: node scripts/coverage-gate.ts <lcov file> [--raise]");
    return 2;
  }
  const directories = coverageByDirectory(readFileSync(file, "utf8"));
  const floors = JSON.parse(readFileSync(FLOORS_FILE, "utf8")) as Record<string, number>;
  if (flag === "--raise") {
    for (const entry of directories) {
      const today = Math.floor((percent(entry) - 0.5) * 2) / 2;
      floors[entry.directory] = Math.max(floors[entry.directory] ?? 0, today);
    }
    const sorted = Object.fromEntries(Object.entries(floors).sort(([a], [b]) => a.localeCompare(b)));
    writeFileSync(FLOORS_FILE, `${JSON.stringify(sorted, null, 2)}\n`);
  }
  const { lines, passed } = judgeCoverage(directories, floors);
  console.log(`line coverage per directory (floors: test/coverage-floors.json)\n${lines.join("\n")}`);
  if (!passed) console.error("coverage gate: a directory is below its floor or has none");
  return passed ? 0 : 1;
}

if (import.meta.main) process.exitCode = main(process.argv.slice(2));

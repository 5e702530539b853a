// CPU per access line through stdout's destination, SonicBoom's own write against the gateway's
// (src/log-destination.ts), in one process each, to /dev/null: lines come in batches of 50 a
// turn, as 50 keep-alive connections give them, so they pile up while a write is in flight.
//   node scripts/bench/log-line-cost.ts [rounds]
import { execFileSync } from "node:child_process";
import pino from "pino";
import { measureLinesOnce } from "../../src/log-destination.ts";
import { destinationOptions, flatLineLogger } from "../../src/logger.ts";

const LINES = 200_000;
const LINE = {
  reqId: "0b5c6f1e-7c1a-4b55-9d3e-9a3c2b1f0e4d",
  operation: "listPets",
  method: "GET",
  path: "/v1/pets?limit=20",
  status: 200,
  durationMs: 1.234,
  upstreamMs: 0.9,
  upstreamStatus: 200,
  consumer: "consumer-17",
};

function measure(patched: boolean): Promise<number> {
  const sonic = pino.destination({ ...destinationOptions(false), dest: "/dev/null" });
  if (patched) measureLinesOnce(sonic);
  const log = flatLineLogger(pino({ base: { pid: process.pid } }, sonic));
  const start = process.cpuUsage();
  let written = 0;
  return new Promise((resolve) => {
    const batch = () => {
      for (let i = 0; i < 50; i++) log.info(LINE, "request");
      written += 50;
      if (written < LINES) return setImmediate(batch);
      sonic.flushSync();
      const used = process.cpuUsage(start);
      resolve((used.user + used.system) / LINES);
    };
    batch();
  });
}

const [mode, rounds = "3"] = process.argv.slice(2);
if (mode === "own" || mode === "patched") {
  process.stdout.write(`${await measure(mode === "patched")}\n`);
} else {
  for (let round = 0; round < Number(mode ?? rounds); round++) {
    const run = (which: string) =>
      Number(execFileSync(process.execPath, [import.meta.filename, which], { encoding: "utf8" }));
    const own = run("own");
    const patched = run("patched");
    process.stdout.write(
      `round ${round + 1}: SonicBoom's write ${own.toFixed(2)} us/line, the gateway's ${patched.toFixed(2)} us/line (${(patched / own).toFixed(2)})\n`,
    );
  }
}

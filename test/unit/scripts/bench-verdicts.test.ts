// The bench's verdicts on a target (scripts/bench/stats.ts): a ratio to reach, or a cost to stay
// under, judged on the median of the per-round ratios and on how many rounds are near it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { type Measured, percentile, targetVerdict } from "../../../scripts/bench/stats.ts";

const run = (rps: number, cpuUs: number): Measured => ({
  requests: rps,
  seconds: 1,
  rps,
  p50: 1,
  p99: 2,
  non2xx: 0,
  errors: 0,
  cpuUs,
});
const cpu = (x: Measured, y: Measured) => (x.cpuUs as number) / (y.cpuUs as number);

test("a ratio to reach is met at or above it, with enough rounds near it", () => {
  const runs = { a: [run(260, 1), run(250, 1), run(247, 1)], b: [run(100, 1), run(100, 1), run(100, 1)] };
  assert.match(
    targetVerdict(runs, "a", "b", 2.5) ?? "",
    /^MET: a\/b 2\.50 \(target >= 2\.5; 3 of 3 rounds >= 2\.45/,
  );
  assert.match(targetVerdict(runs, "a", "b", 2.6) ?? "", /^MISSED: a\/b 2\.50 \(target >= 2\.6/);
});

test("a cost to stay under is met at or below it, and missed above it", () => {
  const cheap = {
    pair: [run(1, 28), run(1, 30), run(1, 31)],
    gateway: [run(1, 100), run(1, 100), run(1, 100)],
  };
  const verdict = targetVerdict(cheap, "pair", "gateway", 0.3, cpu, "cpu pair/gateway", true);
  assert.match(
    verdict ?? "",
    /^MET: cpu pair\/gateway 0\.30 \(target <= 0\.3; 3 of 3 rounds <= 0\.35, 3 needed\)/,
  );
  const dear = {
    pair: [run(1, 40), run(1, 45), run(1, 33)],
    gateway: [run(1, 100), run(1, 100), run(1, 100)],
  };
  assert.match(
    targetVerdict(dear, "pair", "gateway", 0.3, cpu, "cpu pair/gateway", true) ?? "",
    /^MISSED: cpu pair\/gateway 0\.40 \(target <= 0\.3; 1 of 3 rounds <= 0\.35/,
  );
});

test("a target whose runs are missing says nothing; percentiles are nearest-rank", () => {
  assert.equal(targetVerdict({ a: [run(1, 1)] }, "a", "b", 1), undefined);
  const sorted = Float64Array.from([0.1, 0.2, 0.3, 0.4, 5]);
  assert.equal(percentile(sorted, 50), 0.3);
  assert.equal(percentile(sorted, 99), 5);
  assert.ok(Number.isNaN(percentile(new Float64Array(), 99)));
});

// The work a gateway with these policies cannot skip on a request, measured alone in a quiet
// process: the floor under what the gateway adds to the bare proxy. With the bare proxy's CPU per
// request from the same run, it gives the best gateway/bare a perfect implementation could reach
// (bench.ts: "ceiling"), which says whether a target is a matter of tuning or out of reach.
//
// Each piece in the cheapest form this project has, so the floor is a lower bound for it, not for
// every implementation (a validator written by hand for one schema, with no JSON.parse, is
// cheaper still: bench/results/2026-11-23-figures-from-the-readme.md; the measured bounds, the
// bare proxy with --check and with --must-do, hold the same check):
//   answer check   JSON.parse of the backend's answer and the operation's compiled ajv validator
//   request check  the same for the request body, where the operation has one
//   key digest     SHA-256 of the presented key and one hash-table lookup (keys are kept as digests)
//   deadline       a timer set and cleared, for the 504 a backend that does not answer must get
//   metrics        one observation of the per-operation request-duration histogram
//   access line    one pino line with the access line's fields, written to /dev/null in batches
//                  (must-do-parts.ts)
//
//   node scripts/bench/must-do.ts INPUT.json    (written by bench.ts)
// Prints one JSON line: { "<scenario>": { "<piece>": microseconds, ... }, ... }.
import { hash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createMetrics, statusLabel } from "../../src/metrics.ts";
import { loadApiDescription } from "../../src/openapi.ts";
import { accessLogToDevNull, answerValidator, DEADLINE_MS } from "./must-do-parts.ts";

export interface MustDoInput {
  readonly key: string;
  readonly scenarios: Record<
    string,
    { operationId: string; status: number; answer: string; requestBody: string | undefined }
  >;
}
export type MustDoCosts = Record<string, Record<string, number>>;

const ROOT = resolve(import.meta.dirname, "../..");

/** Microseconds per call: the median of 7 batches of about 40 ms each, after a warm-up. */
function timePerCall(work: () => unknown): number {
  let sink: unknown;
  const warmUpEnd = performance.now() + 100;
  let calls = 0;
  while (performance.now() < warmUpEnd) {
    sink = work();
    calls++;
  }
  const batch = Math.max(100, Math.round(calls * 0.4));
  const samples: number[] = [];
  for (let round = 0; round < 7; round++) {
    const start = performance.now();
    for (let i = 0; i < batch; i++) sink = work();
    samples.push(((performance.now() - start) * 1000) / batch);
  }
  if (sink === Symbol.for("never")) process.stdout.write("");
  samples.sort((a, b) => a - b);
  return samples[3] as number;
}

const input = JSON.parse(readFileSync(process.argv[2] as string, "utf8")) as MustDoInput;
const api = loadApiDescription(join(ROOT, "config/openapi.json"));
const keys = new Map([[hash("sha256", input.key, "hex"), "bench"]]);
const metrics = createMetrics({ defaultMetrics: false });
const access = accessLogToDevNull();

const noDeadline = () => {};

const costs: MustDoCosts = {};
for (const [scenario, { operationId, status, answer, requestBody }] of Object.entries(input.scenarios)) {
  const operation = api.operation(operationId);
  if (!operation) throw new Error(`${scenario}: no operation ${operationId}`);
  const validateAnswer = answerValidator(api, operationId, String(status));
  const validateRequest = operation.requestBody?.validate;
  const answerBytes = Buffer.from(answer, "base64");
  if (!validateAnswer(JSON.parse(answerBytes.toString("utf8"))))
    throw new Error(`${scenario}: the backend's answer does not match its schema`);
  const pieces: Record<string, number> = {
    "answer check": timePerCall(() => validateAnswer(JSON.parse(answerBytes.toString("utf8")))),
  };
  if (requestBody !== undefined && validateRequest) {
    const bodyBytes = Buffer.from(requestBody);
    pieces["request check"] = timePerCall(() => validateRequest(JSON.parse(bodyBytes.toString("utf8"))));
  }
  pieces["key digest"] = timePerCall(() => keys.get(hash("sha256", input.key, "hex")));
  pieces.deadline = timePerCall(() => clearTimeout(setTimeout(noDeadline, DEADLINE_MS)));
  pieces.metrics = timePerCall(() =>
    metrics.observeRequest(operationId, operation.method, statusLabel(status), 0.002),
  );
  pieces["access line"] = timePerCall(() =>
    access.info(
      {
        reqId: "4f1c2d3e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
        operation: operationId,
        method: operation.method,
        path: "/v1/pets",
        status,
        durationMs: 1.234,
        consumer: "bench",
      },
      "request",
    ),
  );
  costs[scenario] = pieces;
}
process.stdout.write(`${JSON.stringify(costs)}\n`);

// What the usage policy's phases cost a request, alone: the policy created as start-up creates it
// (its default options), its phases driven on the core's own exchange, in this process, against
// the same loop with no policy. The bench's list20 scenario measures the whole request; this
// measures the policy.
//
//   node scripts/bench/usage-cost.ts [scenario|all] [rounds]   ns per request, median of the rounds
//   node scripts/bench/usage-cost.ts --instructions [scenario|all] [n]
//     instructions per request under valgrind's callgrind, counted only over n requests after a
//     warm-up (the policy's loop less the same loop without it): repeatable on a busy machine,
//     where the times are not. Needs valgrind; about a minute per scenario.
//
// Scenarios: list20, GET /v1/pets with no query, one consumer (the bench's); query, GET
// /v1/pets?limit=20&status=available; consumers, the list20 request from 1,000 consumers in turn;
// create, POST /v1/pets with a JSON body.
import { execFileSync, spawnSync } from "node:child_process";
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import pino from "pino";
import usage from "../../policies/usage/index.ts";
import { loadApiDescription, type Operation } from "../../src/openapi.ts";
import { type CoreExchange, newExchange } from "../../src/pipeline/exchange.ts";
import type { OperationPolicy } from "../../src/policy.ts";
import { DEFAULT_OPENAPI_FILE } from "../../src/project-files.ts";

const api = loadApiDescription(DEFAULT_OPENAPI_FILE);
const operationOf = (id: string) => api.operation(id) as Operation;

interface Scenario {
  readonly operation: Operation;
  readonly query: Readonly<Record<string, string>>;
  readonly consumers: number;
  readonly status: number;
  readonly body?: string;
}

const SCENARIOS: Readonly<Record<string, Scenario>> = {
  list20: { operation: operationOf("listPets"), query: {}, consumers: 1, status: 200 },
  query: {
    operation: operationOf("listPets"),
    query: { limit: "20", status: "available" },
    consumers: 1,
    status: 200,
  },
  consumers: { operation: operationOf("listPets"), query: {}, consumers: 1000, status: 200 },
  create: {
    operation: operationOf("createPet"),
    query: {},
    consumers: 1,
    status: 201,
    body: JSON.stringify({ name: "Rex", categoryId: 1, status: "available" }),
  },
};

function phasesOf(operation: Operation): OperationPolicy {
  const instance = usage.create(
    { maxConsumers: 10_000, logEverySeconds: 0, sampleAnswers: 0 },
    {
      api,
      environment: "production",
      now: Date.now,
      logger: pino({ level: "silent" }),
      responseHeaders: () => [],
    },
    undefined,
  );
  return instance.forOperation(operation) ?? {};
}

/** One exchange per consumer, as the core makes one per request (made once here: the policy is measured). */
function exchangesOf(scenario: Scenario): CoreExchange[] {
  return Array.from({ length: scenario.consumers }, (_, index) => {
    const req = { url: "/v1/pets", method: "GET", headers: {} } as unknown as IncomingMessage;
    const exchange = newExchange(req, {} as ServerResponse, "id", "127.0.0.1");
    exchange.identify(scenario.consumers === 1 ? "count" : `consumer-${index}`);
    for (const [name, value] of Object.entries(scenario.query)) exchange.query.set(name, value);
    if (scenario.body !== undefined) exchange.body = Buffer.from(scenario.body);
    return exchange;
  });
}

/** Runs n requests through the phases (or none), as the pipeline calls them. */
function run(scenario: Scenario, phases: OperationPolicy | undefined, n: number): void {
  const exchanges = exchangesOf(scenario);
  const headers: OutgoingHttpHeaders = {};
  const { status } = scenario;
  for (let i = 0; i < n; i++) {
    const exchange = exchanges[i % exchanges.length] as CoreExchange;
    phases?.onRequest?.(exchange);
    if (exchange.body !== undefined) phases?.onRequestBody?.(exchange);
    phases?.onReply?.(exchange, status, headers);
  }
}

function nsPerRequest(scenario: Scenario, phases: OperationPolicy | undefined): number {
  const n = 1_000_000;
  run(scenario, phases, n / 10);
  const started = process.hrtime.bigint();
  run(scenario, phases, n);
  return Number(process.hrtime.bigint() - started) / n;
}

/** Callgrind's instruction count of n requests after a warm-up: this process, run under valgrind. */
function countUnderCallgrind(name: string, n: number, bare: boolean): number {
  const { stderr: output } = spawnSync(
    "valgrind",
    [
      "--tool=callgrind",
      "--instr-atstart=no",
      "--callgrind-out-file=/dev/null",
      process.execPath,
      // No compiler or collector threads: their work would land in the window at random.
      "--single-threaded",
      import.meta.filename,
      "--counted",
      name,
      String(n),
      bare ? "bare" : "policy",
    ],
    { encoding: "utf8", stdio: ["ignore", "inherit", "pipe"] },
  );
  const collected = /Collected : (\d+)/.exec(output)?.[1];
  if (collected === undefined) throw new Error(`no count from callgrind: ${output.slice(-500)}`);
  return Number(collected);
}

/** Under callgrind: the warm-up uninstrumented, then n requests counted. */
function counted(scenario: Scenario, n: number, bare: boolean): void {
  const phases = bare ? undefined : phasesOf(scenario.operation);
  run(scenario, phases, 200_000);
  const callgrind = (on: "on" | "off") => execFileSync("callgrind_control", ["-i", on, String(process.pid)]);
  callgrind("on");
  run(scenario, phases, n);
  callgrind("off");
}

const args = process.argv.slice(2);
const scenarioNamed = (name: string): Scenario => {
  const scenario = SCENARIOS[name];
  if (scenario === undefined) throw new Error(`no scenario ${name}: ${Object.keys(SCENARIOS).join(", ")}`);
  return scenario;
};
const namesOf = (given: string | undefined) =>
  given === undefined || given === "all" ? Object.keys(SCENARIOS) : [given];
if (args[0] === "--counted") {
  counted(scenarioNamed(args[1] ?? ""), Number(args[2]), args[3] === "bare");
} else if (args[0] === "--instructions") {
  const n = Number(args[2] ?? 200_000);
  for (const name of namesOf(args[1])) {
    scenarioNamed(name);
    const policy = countUnderCallgrind(name, n, false);
    const bare = countUnderCallgrind(name, n, true);
    process.stdout.write(
      `${name}: ${((policy - bare) / n).toFixed(0)} instructions/request (${policy} with the policy, ${bare} without, ${n} requests)\n`,
    );
  }
} else {
  const rounds = Number(args[1] ?? 5);
  for (const name of namesOf(args[0])) {
    const scenario = scenarioNamed(name);
    const costs: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const bare = nsPerRequest(scenario, undefined);
      costs.push(nsPerRequest(scenario, phasesOf(scenario.operation)) - bare);
    }
    costs.sort((a, b) => a - b);
    const median = costs[Math.floor(costs.length / 2)] as number;
    process.stdout.write(
      `${name}: ${median.toFixed(0)} ns/request (rounds ${costs.map((c) => c.toFixed(0)).join(", ")})\n`,
    );
  }
}

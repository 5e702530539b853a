// One benchmark run from start to end: the backend, the targets, the scenarios in turn, the
// report; or, with --profile, the gateway and the bare proxy under --cpu-prof and their hot spots.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { buildForStart, GATEWAY_NODE_FLAGS } from "../start-command.ts";
import { type Baseline, type Bench, chosen, type Options, ROOT, type ScenarioId, wanted } from "./context.ts";
import { REQUESTS } from "./load.ts";
import { setUpProcesses, shutDown, startNode, stop } from "./processes.ts";
import { accountSteps, formatStepTable, readStepTable, rewriteMarkedBlock } from "./profile-steps.ts";
import {
  formatProfileDifference,
  formatProfileSummary,
  type ProfileSummary,
  summarizeProfile,
} from "./profile-summary.ts";
import {
  fileStamp,
  gitCommit,
  machine,
  printMustDo,
  printRss,
  printScenario,
  RESULTS_DIR,
  writeResults,
} from "./report.ts";
import {
  decisionRateScenario,
  keysScenario,
  measureMustDo,
  patternsScenario,
  type RssResult,
  rateScenario,
  rssScenario,
  type ScenarioResult,
  throughputScenario,
  writePatternDocument,
} from "./scenarios.ts";
import {
  bareProxyArgs,
  checkout,
  decisionServiceOf,
  KEYS,
  LOAD_KEYS,
  startBackend,
  startDecisionGateway,
  startFastify,
  startGateway,
  startNginx,
  startNginxCheck,
  startNginxDecision,
  type Target,
  undiciProxyArgs,
  writeKeys,
} from "./targets.ts";
import { tracingScenario } from "./tracing.ts";

export async function main(options: Options): Promise<void> {
  const { work } = setUpProcesses();
  const bench: Bench = {
    ...options,
    work,
    compared: undefined,
    mustDo: undefined,
    answered: new Map(),
    warmed: new Set(),
  };
  const started = Date.now();
  const startMachine = machine();
  process.stderr.write(
    `petstore-gateway benchmark (${bench.preset}): ${startMachine.cores} cores, ${startMachine.cpu}, node ${startMachine.node}, load generator ${bench.loader}${bench.nginxPath ? ", nginx" : ""}\n`,
  );
  buildForStart(ROOT);
  const backend = await startBackend(bench);
  const backendOrigin = new URL(backend.url).origin;
  const backendPid = backend.child.pid as number;
  const direct: Target = { name: "direct", origin: backendOrigin, pids: () => [backendPid] };

  if (bench.profile) return profile(bench, backend.url, direct);
  const mustDo = await measureMustDo(bench, direct);
  bench.mustDo = mustDo;
  if (Object.keys(mustDo).length > 0) printMustDo(mustDo);

  const startBare = async (kind: Baseline): Promise<Target> => {
    const { child, url } = await startNode(kind, bareProxyArgs(kind, backendOrigin));
    const pid = child.pid as number;
    return { name: kind, origin: url, pids: () => [pid] };
  };
  const bare = await startBare("bare");
  const bareCheck = chosen(bench, "bare-check") ? await startBare("bare-check") : undefined;
  const bareMust = chosen(bench, "bare-must") ? await startBare("bare-must") : undefined;
  // The same proxies on undici, the gateway's client (scripts/bench/undici-proxy.ts), and the peer
  // a Node team would write (fastify + @fastify/reply-from doing the must-do work).
  const startUndici = async (kind: "bare-undici" | "must-undici"): Promise<Target> => {
    const { child, url } = await startNode(kind, undiciProxyArgs(kind, backendOrigin));
    const pid = child.pid as number;
    return { name: kind, origin: url, pids: () => [pid] };
  };
  const bareUndici = chosen(bench, "bare-undici") ? await startUndici("bare-undici") : undefined;
  const mustUndici = chosen(bench, "must-undici") ? await startUndici("must-undici") : undefined;
  const oneKeyFile = join(bench.work, "keys-1.json");
  writeKeys(oneKeyFile, 1);
  // The targets that read a key file get the load spread over LOAD_KEYS keys, one per request in
  // turn (the keys and patterns scenarios keep their own files and one key).
  const loadKeyFile = join(bench.work, `keys-${LOAD_KEYS}.json`);
  writeKeys(loadKeyFile, LOAD_KEYS);
  const spread = <T extends Target>(target: T): T & { keys: readonly string[] } => ({
    ...target,
    keys: KEYS,
  });
  const fastify = chosen(bench, "fastify")
    ? spread(await startFastify(backendOrigin, loadKeyFile))
    : undefined;
  const gateway = spread(await startGateway(bench, "gateway", backend.url, loadKeyFile));
  const nginx = chosen(bench, "nginx") ? await startNginx(bench, backendOrigin) : undefined;
  // Decision mode (issue 31), on list20 and getPet: Debian's nginx with the generated config,
  // asking the gateway in decision mode (nginx-decision) or the least check (nginx-check).
  const decides = bench.nginxPath !== undefined && (wanted(bench, "list20") || wanted(bench, "getPet"));
  const decisionPairs: (Target & { stop(): Promise<void> })[] = [];
  if (decides && chosen(bench, "nginx-decision")) {
    const service = decisionServiceOf(await startDecisionGateway(bench, "decision", loadKeyFile));
    const pair = await startNginxDecision(bench, "nginx-decision", backend.url, loadKeyFile, service);
    if (pair) decisionPairs.push(spread(pair));
  }
  // A diagnostic, run only when named: the same pair with no log line per decision.
  if (decides && chosen(bench, "nginx-decision-unlogged")) {
    const quiet = await startDecisionGateway(bench, "decision-unlogged", loadKeyFile, undefined, {
      LOG_LEVEL: "warn",
    });
    const service = decisionServiceOf(quiet);
    const pair = await startNginxDecision(
      bench,
      "nginx-decision-unlogged",
      backend.url,
      loadKeyFile,
      service,
    );
    if (pair) decisionPairs.push(spread(pair));
  }
  if (decides && chosen(bench, "nginx-check")) {
    const service = await startNginxCheck(bench, loadKeyFile);
    const pair = await startNginxDecision(bench, "nginx-check", backend.url, loadKeyFile, service);
    if (pair) decisionPairs.push(spread(pair));
  }
  const proxies: Target[] = [
    direct,
    ...(nginx ? [nginx] : []),
    bare,
    ...(bareUndici ? [bareUndici] : []),
    ...(mustUndici ? [mustUndici] : []),
    gateway,
  ].filter((t) => chosen(bench, t.name));
  if (bench.comparedCommit) {
    const tree = checkout(bench, bench.comparedCommit);
    proxies.push(
      spread(await startGateway(bench, tree.name, backend.url, loadKeyFile, GATEWAY_NODE_FLAGS, tree.root)),
    );
    bench.compared = tree.name;
  } else if (bench.compareFlags) {
    const compared = `gateway ${bench.compareFlags.join(" ")}`;
    bench.compared = compared;
    proxies.push(spread(await startGateway(bench, compared, backend.url, loadKeyFile, bench.compareFlags)));
  }

  const scenarios: ScenarioResult[] = [];
  const run = async (id: ScenarioId, make: () => Promise<ScenarioResult>) => {
    if (!wanted(bench, id)) return;
    process.stderr.write(`${id} `);
    const result = await make();
    process.stderr.write("\n");
    printScenario(result);
    scenarios.push(result);
  };
  // The cost of response validation on its own: the same gateway with the contract off, on the
  // pages where the contract reads the most.
  // The decision pairs are held to it on getPet too.
  const withoutContract =
    (wanted(bench, "list20") || wanted(bench, "list100") || decisionPairs.length > 0) &&
    chosen(bench, "gateway-nocontract")
      ? spread(await startGateway(bench, "gateway-nocontract", backend.url, loadKeyFile, [], ROOT, "off"))
      : undefined;
  // The page scenarios carry the targets: with them run the checking bare proxy and the must-do
  // bare proxy (the measured bounds) and the gateway without its contract (the contract's own cost).
  // Report mode at a sample of 0.1, on the 100-animal page, where the contract reads the most.
  const reportSampled =
    wanted(bench, "list100") && chosen(bench, "gateway-report-0.1")
      ? spread(
          await startGateway(
            bench,
            "gateway-report-0.1",
            backend.url,
            loadKeyFile,
            GATEWAY_NODE_FLAGS,
            ROOT,
            "report-0.1",
          ),
        )
      : undefined;
  const pages = [
    ...proxies,
    ...(bareCheck ? [bareCheck] : []),
    ...(bareMust ? [bareMust] : []),
    ...(fastify ? [fastify] : []),
    ...(withoutContract ? [withoutContract] : []),
  ];
  const withDecisionPairs = (targets: readonly Target[]) =>
    decisionPairs.length === 0
      ? targets
      : [
          ...targets,
          ...decisionPairs,
          ...(withoutContract && !targets.includes(withoutContract) ? [withoutContract] : []),
        ];
  // nginx is the reference for what a proxy can do at all: one scenario says it (bare/nginx), and
  // its turns elsewhere would only lengthen the run (the whole of it stays well under five minutes).
  const withoutNginx = (targets: readonly Target[]) => targets.filter((target) => target !== nginx);
  await run("list20", () =>
    throughputScenario(
      bench,
      "list20",
      "GET /v1/pets, a 20-animal page",
      REQUESTS.list20,
      withDecisionPairs(pages),
      direct,
      0.9,
    ),
  );
  await run("list100", () =>
    throughputScenario(
      bench,
      "list100",
      "GET /v1/pets?limit=100, a 100-animal page",
      REQUESTS.list100,
      withoutNginx([...pages, ...(reportSampled ? [reportSampled] : [])]),
      direct,
      0.8,
    ),
  );
  if (withoutContract && decisionPairs.length === 0) await stop(withoutContract.child);
  if (reportSampled) await stop(reportSampled.child);
  if (fastify) await stop(fastify.child);
  await run("create", () =>
    throughputScenario(
      bench,
      "create",
      "POST /v1/pets, a created Pet",
      REQUESTS.create,
      withoutNginx(proxies),
      direct,
      undefined,
    ),
  );
  await run("getPet", () =>
    throughputScenario(
      bench,
      "getPet",
      "GET /v1/pets/{id}, deprecated",
      REQUESTS.getPet,
      withDecisionPairs(withoutNginx(proxies)),
      direct,
      undefined,
    ),
  );
  for (const pair of decisionPairs) await pair.stop();
  if (withoutContract && decisionPairs.length > 0) await stop(withoutContract.child);
  if (wanted(bench, "keys")) {
    const manyKeyFile = join(bench.work, "keys-100000.json");
    writeKeys(manyKeyFile, 100_000);
    // Both fresh, so that neither has had more time than the other to warm up.
    const oneKey = await startGateway(bench, "gateway-1key", backend.url, oneKeyFile);
    const manyKeys = await startGateway(bench, "gateway-100k", backend.url, manyKeyFile);
    await run("keys", () => keysScenario(bench, oneKey, manyKeys, direct));
    await Promise.all([stop(oneKey.child), stop(manyKeys.child)]);
  }
  if (wanted(bench, "patterns")) {
    // The bundled document has no pattern: this one gives createPet's name one, both ways.
    const withPatterns = writePatternDocument(join(bench.work, "openapi-patterns.json"));
    const plain = await startGateway(bench, "gateway-no-patterns", backend.url, oneKeyFile);
    const patterned = await startGateway(
      bench,
      "gateway-patterns",
      backend.url,
      oneKeyFile,
      undefined,
      ROOT,
      "enforce",
      withPatterns,
    );
    await run("patterns", () => patternsScenario(bench, plain, patterned, direct));
    await Promise.all([stop(plain.child), stop(patterned.child)]);
  }
  // At equal load only the gateway against the bare proxy is asked (p99 within 1 ms).
  await run("rate", () =>
    rateScenario(
      bench,
      proxies.filter((target) => target !== direct && target !== nginx),
      direct,
    ),
  );
  // The decision's own latency at 1,000 decisions/s, from its access lines: a pair of its own,
  // whose gateway logs to a file (the throughput pairs log to /dev/null, as the gateway does).
  if (wanted(bench, "decision-rate") && chosen(bench, "nginx-decision") && bench.nginxPath) {
    const logFile = join(bench.work, "decision-access.log");
    const service = decisionServiceOf(
      await startDecisionGateway(bench, "decision-logged", loadKeyFile, logFile),
    );
    const pair = await startNginxDecision(bench, "nginx-decision", backend.url, loadKeyFile, service);
    if (pair) {
      await run("decision-rate", () => decisionRateScenario(bench, pair, logFile, direct));
      await pair.stop();
    }
  }
  // Tracing off, at 0.01 and at 1.0, fresh gateways each, the traced ones exporting to a receiver.
  await run("tracing", () => tracingScenario(bench, backend.url, loadKeyFile, direct));
  let rss: RssResult | undefined;
  if (wanted(bench, "rss")) {
    process.stderr.write("rss ");
    rss = await rssScenario(bench, backend.url, backendOrigin, oneKeyFile);
    process.stderr.write("\n");
    printRss(rss);
  }

  shutDown();
  await nginx?.stop();
  const elapsedS = (Date.now() - started) / 1000;
  const file = writeResults(started, {
    startedAt: new Date(started).toISOString(),
    elapsedS,
    commit: gitCommit(),
    preset: bench.preset,
    settings: bench.settings,
    loader: bench.loader,
    backend: bench.backend,
    machine: { ...startMachine, loadAverageAtEnd: machine().loadAverage },
    mustDo,
    scenarios,
    rss,
  });
  process.stdout.write(`\n${Math.round(elapsedS)} s. Results: ${relative(process.cwd(), file)}\n`);
}

/** The gateway and the bare proxy under --cpu-prof with the throughput scenarios; then the hot spots. */
async function profile(bench: Bench, upstreamUrl: string, direct: Target): Promise<void> {
  const dir = join(RESULTS_DIR, `profile-${fileStamp(new Date())}`);
  mkdirSync(join(dir, "bare"), { recursive: true });
  mkdirSync(join(dir, "gateway"), { recursive: true });
  const backendOrigin = direct.origin;
  const bareProcess = await startNode("bare proxy", bareProxyArgs(bench.baseline, backendOrigin), [
    "--cpu-prof",
    `--cpu-prof-dir=${join(dir, "bare")}`,
  ]);
  const barePid = bareProcess.child.pid as number;
  const bare: Target = { name: "bare", origin: bareProcess.url, pids: () => [barePid] };
  const keys = join(bench.work, "keys-1.json");
  writeKeys(keys, 1);
  const gateway = await startGateway(bench, "gateway", upstreamUrl, keys, [
    "--cpu-prof",
    `--cpu-prof-dir=${join(dir, "gateway")}`,
  ]);
  const ids = (["list20", "list100", "create", "getPet"] as const).filter((id) => wanted(bench, id));
  const loadAtStart = machine().loadAverage;
  const measuredCpu: number[] = [];
  for (const id of ids) {
    process.stderr.write(`${id} `);
    const result = await throughputScenario(
      bench,
      id,
      `${id} (under --cpu-prof)`,
      REQUESTS[id],
      [bare, gateway],
      direct,
      undefined,
    );
    process.stderr.write("\n");
    printScenario(result);
    const cpu = result.targets.gateway?.cpuUs;
    if (cpu !== undefined) measuredCpu.push(cpu);
  }
  // At a fixed rate the time per request is not the same as at full speed (an event-loop turn
  // per request, fewer batched writes): asked for by name, since a full profile run skips it.
  if (bench.onlyGiven && wanted(bench, "rate")) {
    process.stderr.write("rate ");
    const result = await rateScenario(bench, [bare, gateway], direct);
    process.stderr.write("\n");
    printScenario(result);
  }
  shutDown();
  await stop(bareProcess.child);
  await stop(gateway.child);
  const summaries: Record<string, { summary: ProfileSummary; requests: number }> = {};
  for (const name of ["bare", "gateway"]) {
    const file = readdirSync(join(dir, name)).find((f) => f.endsWith(".cpuprofile"));
    if (!file) throw new Error(`no profile written for ${name}`);
    const summary = summarizeProfile(JSON.parse(readFileSync(join(dir, name, file), "utf8")));
    const requests = bench.answered.get(name) ?? 0;
    summaries[name] = { summary, requests };
    const text = formatProfileSummary(
      `${name} (${relative(process.cwd(), join(dir, name, file))})`,
      summary,
      30,
      requests,
    );
    process.stdout.write(`\n${text}`);
    writeFileSync(join(dir, `${name}-summary.txt`), text);
  }
  const difference = formatProfileDifference(
    "gateway against bare proxy",
    summaries.gateway as { summary: ProfileSummary; requests: number },
    summaries.bare as { summary: ProfileSummary; requests: number },
    40,
  );
  process.stdout.write(`\n${difference}`);
  writeFileSync(join(dir, "difference.txt"), difference);
  // The hot path by step: in the results folder always; in docs/performance.md when the profile
  // ran list20 alone, the load the table there is stated under.
  const gatewayFile = readdirSync(join(dir, "gateway")).find((f) => f.endsWith(".cpuprofile")) as string;
  const account = accountSteps(
    JSON.parse(readFileSync(join(dir, "gateway", gatewayFile), "utf8")),
    ROOT,
    readStepTable(),
  );
  const m = machine();
  const steps = formatStepTable(account, {
    requests: bench.answered.get("gateway") ?? 0,
    measuredCpuUs: ids.length === 1 ? measuredCpu[0] : undefined,
    when: `${new Date().toISOString().slice(0, 10)}, commit ${gitCommit()}, ${ids.join(" + ")} load`,
    command: `npm run bench -- ${process.argv.slice(2).join(" ")}`,
    machine: `Machine: ${m.cores} cores (${m.cpu}), Node ${m.node}, load average ${loadAtStart.join(" ")} at the start and ${m.loadAverage.join(" ")} at the end: shared with other engineers' work, so the figures carry their noise.`,
  });
  process.stdout.write(`\n${steps}`);
  writeFileSync(join(dir, "steps.md"), steps);
  if (ids.length === 1 && ids[0] === "list20") {
    rewriteMarkedBlock(join(ROOT, "docs", "performance.md"), steps);
    process.stdout.write("\ndocs/performance.md: the profile table rewritten.\n");
  }
  process.stdout.write(
    `\nProfiles and summaries: ${relative(process.cwd(), dir)} (open a .cpuprofile in Chrome DevTools or speedscope)\n`,
  );
}

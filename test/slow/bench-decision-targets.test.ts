// The bench's decision-mode targets (scripts/bench/targets.ts) as `npm run bench` starts them:
// Debian's nginx with the generated config, asking the gateway in decision mode (nginx-decision)
// or the least check (nginx-check, scripts/bench/nginx-check.ts). Both must serve what the bench
// sends as the backend does, the check must say what the gateway's door says of it (else the
// reference measures other work), and a pair's CPU must be read from all of its processes.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Bench } from "../../scripts/bench/context.ts";
import { headersFor, REQUESTS, type RequestSpec } from "../../scripts/bench/load.ts";
import { cpuMs, stop } from "../../scripts/bench/processes.ts";
import { preflight } from "../../scripts/bench/runner.ts";
import {
  decisionServiceOf,
  KEY,
  startBackend,
  startDecisionGateway,
  startNginxCheck,
  startNginxDecision,
  type Target,
  writeKeys,
} from "../../scripts/bench/targets.ts";
import { nginxSkipReason } from "../support/nginx.ts";
import "../support/program.ts";

type Pair = Target & { stop(): Promise<void> };

describe("the bench's nginx-decision and nginx-check targets", { skip: nginxSkipReason() }, () => {
  const work = mkdtempSync(join(tmpdir(), "gw-bench-decision-"));
  const bench = { work, nginxPath: "/usr/sbin/nginx", backend: "static" } as unknown as Bench;
  let backend: Awaited<ReturnType<typeof startBackend>>;
  let direct: Target;
  let decision: Pair;
  let check: Pair;
  before(async () => {
    backend = await startBackend(bench);
    const backendPid = backend.child.pid as number;
    direct = { name: "direct", origin: new URL(backend.url).origin, pids: () => [backendPid] };
    const keysFile = join(work, "keys.json");
    writeKeys(keysFile, 3);
    const gateway = decisionServiceOf(await startDecisionGateway(bench, "decision", keysFile));
    decision = (await startNginxDecision(bench, "nginx-decision", backend.url, keysFile, gateway)) as Pair;
    const least = await startNginxCheck(bench, keysFile);
    check = (await startNginxDecision(bench, "nginx-check", backend.url, keysFile, least)) as Pair;
    assert.ok(decision && check, "both pairs started");
  });
  after(async () => {
    await decision?.stop();
    await check?.stop();
    if (backend) await stop(backend.child);
    rmSync(work, { recursive: true, force: true });
  });

  const ask = async (target: Target, path: string, key = KEY) => {
    const spec: RequestSpec = { ...REQUESTS.list20, path };
    return fetch(`${target.origin}${path}`, {
      headers: { ...headersFor(spec), authorization: `Bearer ${key}` },
    });
  };

  test("both answer the bench's list20 and getPet as the backend does, through nginx's generated config", async () => {
    await preflight([decision, check], REQUESTS.list20, direct);
    await preflight([decision, check], REQUESTS.getPet, direct);
  });

  test("the least check says what the gateway's door says of the bench's requests: the limit, the deprecation, a bad key", async () => {
    for (const path of ["/v1/pets", "/v1/pets?limit=1000", "/v1/pets?limit=0&status=sold", "/v1/pets/1"]) {
      const [fromGateway, fromCheck] = [await ask(decision, path), await ask(check, path)];
      await Promise.all([fromGateway.arrayBuffer(), fromCheck.arrayBuffer()]);
      assert.equal(fromCheck.status, fromGateway.status, path);
      for (const name of ["x-limit-applied", "deprecation", "sunset", "link"]) {
        assert.equal(fromCheck.headers.get(name), fromGateway.headers.get(name), `${path}: ${name}`);
      }
    }
    const [refused, refusedToo] = [
      await ask(decision, "/v1/pets", "nobody"),
      await ask(check, "/v1/pets", "nobody"),
    ];
    assert.equal(refused.status, 401);
    assert.equal(refusedToo.status, 401);
    assert.equal(refusedToo.headers.get("www-authenticate"), refused.headers.get("www-authenticate"));
    const code = async (response: Response) => ((await response.json()) as { code: string }).code;
    assert.equal(await code(refusedToo), await code(refused));
  });

  test("a pair's CPU is read from nginx's master and worker and from its decision service", () => {
    for (const pair of [decision, check]) {
      const pids = pair.pids();
      assert.ok(pids.length >= 3, `${pair.name}: ${pids.join(", ")}`);
      for (const pid of pids) assert.notEqual(cpuMs(pid), undefined, `${pair.name}: pid ${pid}`);
      const parts = pair.parts?.() ?? {};
      assert.equal(Object.keys(parts).length, 2, pair.name);
      assert.ok((parts.nginx?.length ?? 0) >= 2, `${pair.name}: nginx's master and a worker`);
      assert.deepEqual(Object.values(parts).flat().sort(), [...pids].sort());
    }
  });
});

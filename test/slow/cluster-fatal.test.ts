// When a bug reaches the top of a cluster primary, it exits 70 like a lone process, with one
// `fatal error` line, and its workers stop with it.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { boundedConfig } from "../support/config-file.ts";
import { eventually } from "../support/eventually.ts";
import { startGatewayProgram } from "../support/gateway.ts";
import { writeKeysFile } from "../support/keys.ts";
import { fatalLines } from "../support/processes.ts";

describe("a bug that reaches the top of a cluster primary", () => {
  const keys = writeKeysFile(["acme"]);
  for (const fault of ["exception", "rejection"]) {
    test(`(an uncaught ${fault}) is logged as 'fatal error', exits 70, and the workers stop too`, async () => {
      const gw = await startGatewayProgram({
        upstreamUrl: "http://127.0.0.1:9/v1",
        keys,
        config: boundedConfig(),
        env: { HOST: "127.0.0.1", FAULT: fault },
        program: ["test/fixtures/faulty-primary.ts"],
      });
      try {
        const pids = await eventually("both workers listening", () => {
          const listening = gw.lines
            .filter((line) => line.msg === "worker listening")
            .map((line) => line.worker);
          return listening.length >= 2 ? (listening as number[]) : undefined;
        });
        gw.child.kill("SIGUSR2");
        assert.equal(await gw.exited, 70);
        const [fatal, ...more] = fatalLines(gw);
        assert.equal(more.length, 0);
        assert.equal(fatal?.pid, gw.child.pid);
        assert.equal(fatal?.origin, fault === "rejection" ? "unhandledRejection" : "uncaughtException");
        const alive = (pid: number) => {
          try {
            process.kill(pid, 0);
            return true;
          } catch {
            return false;
          }
        };
        await eventually("every worker gone", () => pids.every((pid) => !alive(pid)), 10_000);
      } finally {
        if (gw.child.exitCode === null) gw.child.kill("SIGKILL");
      }
    });
  }
});

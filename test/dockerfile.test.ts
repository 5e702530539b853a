// The image, read from the Dockerfile (no Docker engine needed): a base pinned to a version, only
// what runs at run time, labels that say which build it is, and the revision reaching
// gateway_build_info.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { PROJECT_ROOT } from "./support/program.ts";

const dockerfile = readFileSync(join(PROJECT_ROOT, "Dockerfile"), "utf8");
// Instructions with their continuation lines joined, comments left out.
const instructions = dockerfile
  .replaceAll(/\\\n/g, " ")
  .split("\n")
  .filter((line) => line.trim() !== "" && !line.startsWith("#"));
const stages = instructions.reduce<string[][]>((all, line) => {
  if (line.startsWith("FROM ")) all.push([]);
  all.at(-1)?.push(line);
  return all;
}, []);
const runtime = stages.at(-1) ?? [];
const argDefault = (name: string) =>
  new RegExp(`^ARG ${name}=(\\S+)$`, "m").exec(instructions.join("\n"))?.[1];

test("every stage builds on one base, pinned to a Node version (major.minor.patch), never a bare major or latest", () => {
  const base = argDefault("NODE_IMAGE");
  assert.match(base ?? "", /^node:\d+\.\d+\.\d+-[a-z]+-slim(@sha256:[0-9a-f]{64})?$/);
  const froms = instructions.filter((line) => line.startsWith("FROM "));
  assert.equal(froms.length, 3);
  for (const from of froms) assert.match(from, /^FROM \$\{NODE_IMAGE\}( AS \w+)?$/);
  // The base's Node is one package.json allows.
  const { engines } = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as {
    engines: { node: string };
  };
  const [major, minor] = (/node:(\d+)\.(\d+)/.exec(base ?? "") ?? []).slice(1).map(Number);
  const [needMajor, needMinor] = (/>=(\d+)\.(\d+)/.exec(engines.node) ?? []).slice(1).map(Number);
  assert.ok(
    (major as number) > (needMajor as number) ||
      (major === needMajor && (minor as number) >= (needMinor as number)),
    `${base} against engines ${engines.node}`,
  );
});

test("the runtime stage copies only what runs: no tests, no benchmark or soak, only the key, report and plan tools", () => {
  const copies = runtime.filter((line) => line.startsWith("COPY "));
  const sources = copies.flatMap((line) => line.split(/\s+/).slice(1, -1)).filter((s) => !s.startsWith("--"));
  assert.deepEqual(sources.sort(), [
    "/app/dist",
    "/app/node_modules",
    "config",
    "package.json",
    "policies",
    "scripts/deprecation-report.ts",
    "scripts/keys.ts",
    "scripts/plan.ts",
    "src",
  ]);
  assert.ok(runtime.includes("USER node"), "runs as the non-root node user");
});

test("the OCI labels carry the version (package.json's), the revision and the source; the revision reaches the gateway", () => {
  const { version } = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as {
    version: string;
  };
  assert.equal(argDefault("VERSION"), version, "bump the Dockerfile's VERSION with package.json's");
  const label = runtime.find((line) => line.startsWith("LABEL ")) ?? "";
  for (const [name, argument] of [
    ["version", "VERSION"],
    ["revision", "GIT_REVISION"],
    ["source", "SOURCE"],
  ]) {
    assert.ok(label.includes(`org.opencontainers.image.${name}="\${${argument}}"`), `label ${name}`);
  }
  // gateway_build_info reads GIT_REVISION from the environment (src/metrics.ts).
  assert.match(runtime.find((line) => line.startsWith("ENV ")) ?? "", /GIT_REVISION=\$\{GIT_REVISION\}/);
});

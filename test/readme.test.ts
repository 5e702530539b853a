// The README is what a user reads instead of the source: its tables of settings, error codes and
// metrics are held to the code here, both ways, so that neither can change without the other.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { test } from "node:test";
import policies from "../policies/index.ts";
import { CORE_ENVIRONMENT, loadConfig } from "../src/config.ts";
import { errorCatalogue } from "../src/index.ts";
import { createMetrics } from "../src/metrics.ts";
import { PROJECT_ROOT } from "./support/program.ts";

const README = readFileSync(resolve(PROJECT_ROOT, "README.md"), "utf8");

const LINES = README.split("\n");

/** Where a section is, from its heading to the next heading of the same or a higher level. */
function sectionRange(heading: string): [number, number] {
  const start = LINES.indexOf(heading);
  assert.notEqual(start, -1, `README has no heading ${heading}`);
  const level = heading.indexOf(" ");
  const end = LINES.findIndex(
    (line, index) => index > start && /^#+ /.test(line) && line.indexOf(" ") <= level,
  );
  return [start + 1, end === -1 ? LINES.length : end];
}

function section(heading: string): string[] {
  return LINES.slice(...sectionRange(heading));
}

/** Each markdown table of the lines, as rows of cells keyed by the header's cells. */
function tables(lines: readonly string[]): Record<string, string>[][] {
  const found: Record<string, string>[][] = [];
  let header: string[] | undefined;
  let rows: Record<string, string>[] = [];
  const cells = (line: string) =>
    line
      .slice(1, line.lastIndexOf("|"))
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim());
  for (const line of [...lines, ""]) {
    if (!line.startsWith("|")) {
      if (header) found.push(rows);
      header = undefined;
      rows = [];
      continue;
    }
    if (!header) header = cells(line);
    else if (!/^\|[\s:|-]+$/.test(line)) {
      const values = cells(line);
      rows.push(Object.fromEntries((header as string[]).map((name, index) => [name, values[index] ?? ""])));
    }
  }
  return found;
}

const code = (cell: string) => /^`([^`]+)`/.exec(cell)?.[1];

test("the README's error catalogue lists every code the gateway has, with its status, and no other", () => {
  const listed = new Map<string, number>();
  for (const row of tables(section("## Error catalogue")).flat()) {
    const name = code(row.Code ?? "");
    if (name) listed.set(name, Number(row.Status));
  }
  const codes = Object.entries(errorCatalogue).map(([name, entry]): [string, number] => [name, entry.status]);
  assert.deepEqual(new Map(codes.sort()), new Map([...listed].sort()));
});

test("the README's metrics table lists every gateway_* and http_* metric with its labels, and no other", () => {
  const listed = new Map<string, string[]>();
  for (const row of tables(section("## Metrics")).flat()) {
    const match = /^`((?:gateway|http)_[a-z_]+)(?:\{([^}]*)\})?`$/.exec(row.Metric ?? "");
    if (match) listed.set(match[1] as string, match[2] ? match[2].split(/,\s*/) : []);
  }
  const { registry } = createMetrics({ defaultMetrics: false });
  // The policies' own instruments, registered as createGateway registers them.
  for (const policy of policies) policy.metrics?.(registry);
  const emitted = new Map<string, string[]>();
  for (const metric of registry.getMetricsAsArray()) {
    emitted.set(metric.name, [...((metric as unknown as { labelNames: string[] }).labelNames ?? [])]);
  }
  // The primary's own two, registered only when WORKERS > 1 (src/cluster/primary.ts).
  const cluster = readFileSync(resolve(PROJECT_ROOT, "src/cluster/primary.ts"), "utf8");
  for (const [, name] of cluster.matchAll(/name: "((?:gateway|http)_[a-z_]+)"/g))
    emitted.set(name as string, []);
  assert.deepEqual(new Map([...emitted].sort()), new Map([...listed].sort()));
});

// A valid value for each variable, to see that setting it reaches the field the README names.
const SAMPLE: Readonly<Record<string, string>> = {
  PORT: "18999",
  HOST: "127.0.0.2",
  OPS_PORT: "18998",
  UPSTREAM_URL: "http://pets.internal:3000/v1",
  ENVIRONMENT: "staging",
  API_KEYS_FILE: "/etc/petstore-gateway/api-keys.json",
  CONTRACT_MODE: "enforce",
  OPENAPI_FILE: "/etc/petstore-gateway/openapi.json",
  LOG_LEVEL: "warn",
  WORKERS: "3",
};

/** A default as the README writes it: JSON (2000, [], "refuse") or a bare word (info). */
function literal(written: string): unknown {
  try {
    return JSON.parse(written);
  } catch {
    return written;
  }
}

/** The dotted names of every setting: a value that is not an object with members. */
function leaves(node: unknown, prefix = ""): string[] {
  if (node === null || typeof node !== "object" || Array.isArray(node) || Object.keys(node).length === 0) {
    return [prefix];
  }
  return Object.entries(node).flatMap(([key, value]) => leaves(value, prefix ? `${prefix}.${key}` : key));
}

function at(config: unknown, field: string): unknown {
  return field.split(".").reduce<unknown>((node, key) => (node as Record<string, unknown>)?.[key], config);
}

test("the README's configuration tables name every environment variable, the field it sets and its default", () => {
  const defaults = loadConfig({ policies, env: {} });
  const variables = new Set<string>();
  const checked = new Set<string>();
  // The lifecycle's options are named relative to their section; every other table names whole fields.
  const [start, end] = sectionRange("### Options (`policies.lifecycle`)");
  const allTables = [
    ...tables([...LINES.slice(0, start), ...LINES.slice(end)]).map((rows) => ({ rows, prefix: "" })),
    ...tables(LINES.slice(start, end)).map((rows) => ({ rows, prefix: "policies.lifecycle." })),
  ];
  for (const { rows, prefix } of allTables) {
    for (const row of rows) {
      const fieldCell = row["Config field"] ?? row.Field ?? row.Option;
      const defaultCell = row.Default;
      if (fieldCell === undefined || defaultCell === undefined) continue;
      const variable = code(row["Environment variable"] ?? "");
      if (variable !== undefined) variables.add(variable);
      const fields = (fieldCell.match(/`[^`]+`/g) ?? []).map((f) => f.slice(1, -1));
      if (fields.length === 0) continue;
      const [first] = fields as [string, ...string[]];
      // "`upstream.maxSockets` / `maxFreeSockets`": the second is a sibling of the first.
      const names = fields.map((f, i) =>
        i === 0 || f.includes(".")
          ? prefix + f
          : `${prefix}${first.slice(0, first.lastIndexOf(".") + 1)}${f}`,
      );
      if (variable !== undefined) {
        const sample = SAMPLE[variable];
        assert.ok(sample, `no sample value for ${variable} in this test`);
        const set = loadConfig({ policies, env: { [variable]: sample } });
        const expected = /^[0-9]+$/.test(sample) ? Number(sample) : sample;
        assert.equal(at(set, names[0] as string), expected, `${variable} sets ${names[0]}`);
      }
      // One value per field, each a literal: `info`, 2000, —; a default told in words is not checked.
      const values = defaultCell
        .split(" / ")
        .map((v) => (/^`([^`]*)`$/.exec(v) ?? /^(—|[0-9]+)$/.exec(v))?.[1]);
      if (values.length !== names.length || values.includes(undefined)) continue;
      for (const [index, name] of names.entries()) {
        const written = values[index] as string;
        const actual = at(defaults, name);
        if (written === "—") {
          assert.equal(actual, undefined, `${name} has no default`);
        } else if (name === "openapi") {
          // Resolved against the project, so that the gateway finds it from any directory.
          assert.ok(String(actual).endsWith(`/${written}`), `${name}: ${actual}`);
        } else {
          assert.deepEqual(actual, literal(written), `${name}: the README says ${written}`);
          checked.add(name);
        }
      }
    }
  }
  const read = new Set([
    ...Object.keys(CORE_ENVIRONMENT),
    ...policies.flatMap((policy) => Object.keys(policy.environment ?? {})),
    "GATEWAY_CONFIG",
  ]);
  assert.deepEqual([...variables].sort(), [...read].sort());
  // Every setting with a default is in a table, but those the README tells in its own words.
  const inWords = ["openapi", "upstream.environments", "policies.cors."];
  const untold = leaves(defaults).filter(
    (field) => !checked.has(field) && !inWords.some((told) => field === told || field.startsWith(told)),
  );
  assert.deepEqual(untold, [], "settings with a default that no README table lists");
});

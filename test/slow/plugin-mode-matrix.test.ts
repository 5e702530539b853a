// The plugin-mode matrix against Debian's nginx, Caddy and HAProxy, each run as this test's own
// child process, and the Envoy and Traefik harnesses (simulated): every cell the same as proxy mode or stated, 0 spoofed identities or
// original-request headers taking effect, one access line and one deprecated-call count per call,
// fail closed, and the committed capability table exactly what these results render.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { coreCatalogue } from "../../src/errors.ts";
import {
  capabilityPage,
  matrixSkipReason,
  NO_CLIENT_HEADERS,
  PROXIES,
  type Row,
  runMatrix,
  type Seen,
  statedFor,
} from "../support/plugin-matrix.ts";

const skip = matrixSkipReason();

/** The code of an Error object sent as application/json, or undefined. */
function errorCodeOf(seen: Seen): string | undefined {
  if (seen.headers["content-type"] !== "application/json") return undefined;
  try {
    return (JSON.parse(seen.body) as { code?: string }).code;
  } catch {
    return undefined;
  }
}
const PAGE = join(import.meta.dirname, "../../docs/plugin-mode/capabilities.md");

describe("plugin mode: proxy mode, nginx, Envoy (simulated), Caddy, Traefik (simulated) and HAProxy before one backend", {
  skip,
}, () => {
  const directory = mkdtempSync(join(tmpdir(), "gw-matrix-"));
  let rows: Row[] = [];
  before(async () => {
    rows = await runMatrix(directory);
  });
  after(() => rmSync(directory, { recursive: true, force: true }));

  test("every cell is the same as proxy mode, or its difference is stated", () => {
    const unstated: string[] = [];
    const staleStatements: string[] = [];
    for (const row of rows) {
      for (const cell of row.cells) {
        const stated = statedFor(cell.proxy, row);
        if (cell.differences.length > 0 && stated === undefined) {
          unstated.push(`${row.case.name} on ${cell.proxy}: ${cell.differences.join("; ")}`);
        }
        if (cell.differences.length === 0 && stated !== undefined) {
          staleStatements.push(`${row.case.name} on ${cell.proxy} is now the same: drop its statement`);
        }
      }
    }
    assert.deepEqual(unstated, []);
    assert.deepEqual(staleStatements, []);
    assert.ok(rows.length >= 40, `${rows.length} cases`);
  });

  test("every statement is true: the stated status, the backend reached or not, its target, the headers left out", () => {
    const untrue: string[] = [];
    let checked = 0;
    for (const row of rows) {
      for (const cell of row.cells) {
        const stated = statedFor(cell.proxy, row);
        if (stated === undefined) continue;
        checked++;
        const where = `${row.case.name} on ${cell.proxy}`;
        if (cell.seen.status !== stated.status)
          untrue.push(`${where}: status ${cell.seen.status}, stated ${stated.status}`);
        const reached = cell.seen.backend !== undefined;
        if (stated.reached !== undefined && reached !== stated.reached)
          untrue.push(`${where}: ${reached ? "reached" : "never reached"} the backend, stated otherwise`);
        if (stated.targetUnchanged && cell.seen.backend?.url !== row.case.path)
          untrue.push(
            `${where}: the backend got ${cell.seen.backend?.url}, stated the client's ${row.case.path}`,
          );
        for (const name of stated.without ?? []) {
          if (cell.seen.headers[name] !== undefined) untrue.push(`${where}: ${name} present, stated absent`);
        }
        if (stated.error !== undefined && errorCodeOf(cell.seen) !== stated.error)
          untrue.push(
            `${where}: ${cell.seen.headers["content-type"]} ${cell.seen.body}, stated ${stated.error}`,
          );
      }
    }
    assert.deepEqual(untrue, []);
    assert.ok(checked >= 45, `${checked} stated cells`);
  });

  test("0 spoofed identities or original-request headers take effect on any proxy", () => {
    const tookEffect: string[] = [];
    for (const row of rows.filter((r) => r.case.spoof)) {
      for (const cell of row.cells) {
        const got = cell.seen.backend;
        const expected = row.reference?.backend;
        if (got?.consumer === "mallory" || (got !== undefined) !== (expected !== undefined)) {
          tookEffect.push(`${row.case.name} on ${cell.proxy}`);
        } else if (
          got &&
          expected &&
          (got.consumer !== expected.consumer || got.url !== expected.url || got.method !== expected.method)
        ) {
          tookEffect.push(`${row.case.name} on ${cell.proxy}: ${got.method} ${got.url} as ${got.consumer}`);
        }
        if (cell.seen.status !== row.reference?.status)
          tookEffect.push(`${row.case.name} on ${cell.proxy}: status`);
      }
    }
    assert.deepEqual(tookEffect, []);
    assert.ok(rows.filter((r) => r.case.spoof).length >= 10);
  });

  test("a deprecated call is logged and counted once per proxy, the render step adding nothing", () => {
    const row = rows.find((r) => r.case.name === "deprecated");
    assert.ok(row?.reference);
    assert.equal(row.reference.deprecatedLines, 1);
    for (const cell of row.cells) {
      assert.equal(cell.seen.deprecatedLines, 1, cell.proxy);
      const expected: string | undefined = NO_CLIENT_HEADERS.has(cell.proxy)
        ? undefined
        : row.reference.headers.deprecation;
      assert.equal(cell.seen.headers.deprecation, expected, cell.proxy);
    }
    // A refusal carried through nginx's render endpoint is one decision: one access line.
    for (const name of ["no-key", "wrong-method", "sunset"]) {
      const refused = rows.find((r) => r.case.name === name);
      for (const cell of refused?.cells ?? [])
        assert.equal(cell.seen.accessLines, 1, `${name} on ${cell.proxy}`);
    }
  });

  test("a decision service down, slow or answering 500 gets the client 5xx, never the backend", () => {
    for (const name of ["decision-down", "decision-slow", "decision-500"]) {
      const row = rows.find((r) => r.case.name === name);
      assert.equal(row?.cells.length, PROXIES.length);
      for (const cell of row?.cells ?? []) {
        assert.ok(
          cell.seen.status >= 500 && cell.seen.status <= 599,
          `${name} on ${cell.proxy}: ${cell.seen.status}`,
        );
        assert.equal(cell.seen.backend, undefined, `${name} on ${cell.proxy} reached the backend`);
      }
    }
  });

  test("nginx answers a decision that failed with the catalogue's DECISION_UNAVAILABLE, as the gateway writes errors", () => {
    const { message, status } = coreCatalogue.DECISION_UNAVAILABLE;
    for (const name of ["decision-down", "decision-slow", "decision-500"]) {
      const cell = rows.find((r) => r.case.name === name)?.cells.find((c) => c.proxy === "nginx");
      assert.equal(cell?.seen.status, status, name);
      assert.deepEqual(JSON.parse(cell.seen.body), { code: "DECISION_UNAVAILABLE", message, status }, name);
      assert.equal(cell.seen.headers["content-type"], "application/json", name);
      assert.equal(cell.seen.headers["cache-control"], "no-store", name);
      assert.equal(cell.seen.headers["x-content-type-options"], "nosniff", name);
      assert.equal(cell.seen.headers["x-request-id"], undefined, name);
    }
  });

  test("a backend slower than upstream.timeoutMs gets the client 504 from every proxy, never the late answer", () => {
    const row = rows.find((r) => r.case.name === "backend-slow");
    assert.equal(row?.reference?.status, 504);
    assert.equal(row?.cells.length, PROXIES.length);
    for (const cell of row?.cells ?? []) assert.equal(cell.seen.status, 504, cell.proxy);
  });

  test("the backend's own 500, 502, 503 and 504 reach the client as the backend sent them, through every proxy", () => {
    for (const name of ["backend-500", "backend-502", "backend-503", "backend-504"]) {
      const row = rows.find((r) => r.case.name === name);
      assert.equal(row?.reference?.status, Number(name.slice(-3)));
      assert.equal(row?.cells.length, PROXIES.length);
      for (const cell of row?.cells ?? []) {
        assert.equal(cell.seen.status, row?.reference?.status, `${name} on ${cell.proxy}`);
        assert.equal(cell.seen.body, row?.reference?.body, `${name} on ${cell.proxy}`);
      }
    }
  });

  test("docs/plugin-mode/capabilities.md is what these results render", () => {
    const committed = readFileSync(PAGE, "utf8");
    assert.equal(
      committed,
      capabilityPage(rows),
      "run node scripts/plugin-mode-capabilities.ts and commit the page",
    );
  });
});

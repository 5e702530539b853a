// What the lifecycle will do to each operation, for `npm run plan` and start-up's warnings: read
// with the same functions create() uses (readLifecycle, brownoutWindows).
import type { PlanContext, PolicyPlan } from "../../src/policy.ts";
import { brownoutWindows } from "./deprecation.ts";
import { daysBetween } from "./deprecation-report.ts";
import {
  type Deprecation,
  deprecationFacts,
  readLifecycle,
  type Stability,
  undatedWarning,
} from "./facts.ts";
import type { LifecycleOptions } from "./index.ts";
import { STABILITY_HEADER } from "./stability.ts";

export function planLifecycle(options: LifecycleOptions, { api, environment, now }: PlanContext): PolicyPlan {
  const { deprecations, stability } = readLifecycle(api, options.operations);
  const windows = brownoutWindows(options, deprecations);
  const warning = undatedWarning(deprecations);
  const at = new Date(now()).toISOString();
  const refuseExperimental = environment === "production" && options.experimentalInProduction === "refuse";
  return {
    warnings: warning ? [warning] : [],
    operation(operation) {
      const deprecation = deprecations.get(operation.id);
      const marker = stability.get(operation.id);
      if (!deprecation && !marker) return undefined;
      const text: string[] = [];
      const data: Record<string, unknown> = {};
      if (deprecation) {
        const facts = deprecated(deprecation, at, api.basePath, options);
        const brownouts = (windows.get(operation.id) ?? []).map((w) => ({
          start: new Date(w.start).toISOString(),
          end: new Date(w.end).toISOString(),
        }));
        data.deprecation = { ...facts.data, brownouts };
        text.push(...facts.text);
        for (const window of brownouts) text.push(`brownout (410) from ${window.start} to ${window.end}`);
      }
      if (marker) {
        data.stability = marker;
        text.push(stabilityLine(marker, refuseExperimental, environment));
      }
      return { text, data };
    },
  };
}

function deprecated(deprecation: Deprecation, at: string, basePath: string, options: LifecycleOptions) {
  const { successor, sources } = deprecation;
  // As the report describes it, successor's public path and all.
  const facts = deprecationFacts(deprecation, basePath);
  const sinceIso = facts.since === undefined ? null : new Date(facts.since).toISOString();
  const sunsetIso = facts.sunset === undefined ? null : new Date(facts.sunset).toISOString();
  const daysLeft = daysBetween(at, sunsetIso);
  const successorName = facts.successor;
  const text = [
    `deprecated: every call logged ("deprecated call"), counted and reported (/deprecations)`,
    sinceIso === null
      ? "since: no date, so no Deprecation header"
      : `since ${sinceIso} (${sources.since}): Deprecation header`,
    sunsetIso === null
      ? "sunset: no date, so no Sunset header and never 410"
      : `sunset ${sunsetIso} (${sources.sunset}): ${
          (daysLeft as number) > 0 ? `${daysLeft} days left` : "passed"
        }; from then on ${options.afterSunset === "refuse" ? "410 OPERATION_SUNSET" : "served (afterSunset: serve)"}`,
  ];
  if (successorName) {
    text.push(
      `successor: ${successorName}${successor?.note ? ` (${successor.note})` : ""} (${sources.successor})`,
    );
  }
  return {
    text,
    data: {
      since: sinceIso,
      sunset: sunsetIso,
      daysToSunset: daysLeft,
      successor: successorName ?? null,
      sources,
      afterSunset: options.afterSunset,
    },
  };
}

function stabilityLine(marker: Stability, refuseExperimental: boolean, environment: string): string {
  const refused = marker === "experimental" && refuseExperimental;
  return `${marker}: ${STABILITY_HEADER}: ${marker} on every answer, calls counted${
    refused ? `; answers 403 OPERATION_NOT_AVAILABLE in ${environment}` : ""
  }`;
}

// getPet's deprecation as the project's own document states it, read the way the lifecycle policy
// reads it: tests that build reports by hand take its path, dates and successor from here instead
// of repeating them.
import type {
  DeprecatedOperationFacts,
  OperationReport,
} from "../../policies/lifecycle/deprecation-report.ts";
import { CallerTally } from "../../policies/lifecycle/deprecation-report.ts";
import { deprecationFacts, readLifecycle } from "../../policies/lifecycle/facts.ts";
import { loadApiDescription } from "../../src/openapi.ts";
import { DEFAULT_OPENAPI_FILE } from "../../src/project-files.ts";

const api = loadApiDescription(DEFAULT_OPENAPI_FILE);
const deprecation = readLifecycle(api).deprecations.get("getPet");
if (deprecation === undefined) throw new Error(`${DEFAULT_OPENAPI_FILE} no longer deprecates getPet`);

export const GET_PET: DeprecatedOperationFacts = deprecationFacts(deprecation, api.basePath);

/** getPet's section of a report, as the report writes its facts, with the figures given. */
export function getPetSection(
  figures: Pick<OperationReport, "daysToSunset" | "calls" | "forgottenCallers" | "callers">,
): OperationReport {
  const section = new CallerTally().report([GET_PET], 0).operations[0] as OperationReport;
  return { ...section, ...figures };
}

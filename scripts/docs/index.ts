// The reference pages generated from the code, as strings keyed by their path in the project:
// `npm run docs` writes them, and test/docs-reference.test.ts compares them with the committed files.
import policies from "../../policies/index.ts";
import { configurationPage } from "./configuration.ts";
import { errorsPage } from "./errors.ts";
import { metricsPage } from "./metrics.ts";
import { tracingPage } from "./tracing.ts";

export async function referencePages(): Promise<Readonly<Record<string, string>>> {
  return {
    "docs/reference/configuration.md": configurationPage(policies),
    "docs/reference/errors.md": errorsPage(policies),
    "docs/reference/metrics.md": await metricsPage(policies),
    "docs/reference/tracing.md": tracingPage(),
  };
}

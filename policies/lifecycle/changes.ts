// What a candidate document changes in the sunsets the gateway enforces. A deprecated
// operation's sunset comes from the document's x-gateway-deprecation or from the config
// (policies.lifecycle.operations), the same way readLifecycle reads them; the running config
// dates the candidate too, where the candidate's document does not. A sunset moved earlier (or
// given where there was none) breaks the callers who planned for the old date; one moved later
// breaks nobody. Read leniently: what the candidate gets wrong, its plan refuses.
import type { DocumentDifference } from "../../src/document-diff.ts";
import type { ApiDescription, Operation } from "../../src/openapi.ts";
import { CONFIG_OPERATIONS, DEPRECATION_EXTENSION, type DeprecationDates } from "./facts.ts";

interface Sunset {
  readonly at: number;
  /** Where it is given: the document's extension or the config's field. */
  readonly source: string;
}

export function sunsetChanges(
  configured: Readonly<Record<string, DeprecationDates>>,
  running: ApiDescription,
  candidate: ApiDescription,
): DocumentDifference[] {
  const keyOf = (operation: Operation) => `${operation.method} ${operation.path}`;
  const next = new Map(candidate.operations.map((operation) => [keyOf(operation), operation] as const));
  const found: DocumentDifference[] = [];
  for (const old of running.operations) {
    const now = next.get(keyOf(old));
    // An operation removed is the document's difference, said there.
    if (now === undefined) continue;
    const before = sunsetOf(old, configured);
    const after = sunsetOf(now, configured);
    // No sunset at all: the operation stays; nobody's plan breaks.
    if (after === undefined) continue;
    const earlier = before === undefined || after.at < before.at;
    if (!earlier && after.at === before.at) continue;
    const date = (sunset: Sunset) => `${new Date(sunset.at).toISOString()} in ${sunset.source}`;
    found.push({
      kind: earlier ? "sunset-earlier" : "sunset-later",
      breaking: earlier,
      weakensSecurity: false,
      direction: "request",
      operation: old.id,
      method: old.method,
      path: old.path,
      location: undefined,
      pointer: undefined,
      message: earlier
        ? `the sunset moves earlier: ${date(after)} (was ${before === undefined ? "none" : date(before)})`
        : `the sunset moves later: ${date(after)} (was ${date(before as Sunset)})`,
    });
  }
  return found;
}

/** The sunset the gateway would enforce on the operation: the document's, else the config's. */
function sunsetOf(
  operation: Operation,
  configured: Readonly<Record<string, DeprecationDates>>,
): Sunset | undefined {
  const extension = operation.extensions[DEPRECATION_EXTENSION] as { sunset?: unknown } | undefined;
  if (typeof extension?.sunset === "string")
    return dated(extension.sunset, `${DEPRECATION_EXTENSION}.sunset`);
  // The config dates only what the document marks deprecated (readLifecycle refuses the rest).
  const given = operation.deprecated ? configured[operation.id]?.sunset : undefined;
  return given === undefined ? undefined : dated(given, `${CONFIG_OPERATIONS}.${operation.id}.sunset`);
}

function dated(text: string, source: string): Sunset | undefined {
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : { at, source };
}

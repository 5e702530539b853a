// Which query parameter is an operation's page size: a fact of the document, read once here so
// that every reader (the limit policy clamps it, the response contract holds a page to it, the
// plan says which it is) gets the same answer, and no policy reads another's options for it.
//
// The document marks it (`x-gateway-page-size: true` on the parameter), or else the name rule
// finds it: on a GET whose 200 answer is an array, the only integer query parameter with a
// maximum named like a page size. `offset` and `page` fit that shape too, and are never taken:
// they say where a page starts, not how long it is.
import { arrayItemsOf } from "../schema-brief.ts";
import type { ParameterSpec, ResponseSpec } from "./description.ts";

export const PAGE_SIZE_EXTENSION = "x-gateway-page-size";
/** The names the rule takes for a page size, as written (case matters). */
export const PAGE_SIZE_NAMES: readonly string[] = ["limit", "pageSize", "page_size", "per_page"];

/**
 * An operation's page size: the parameter and how the document gave it, or, on a list the rule
 * looked at, why it found none. `candidates` names the parameters the name rule would have
 * considered but could not take (a near miss worth a warning).
 */
export type PageSize =
  | { readonly parameter: string; readonly source: "marked" | "named" }
  | {
      readonly parameter: undefined;
      readonly reason: string;
      readonly candidates: readonly string[];
    };

/**
 * The page size of one operation, or undefined when the question does not arise (no parameter
 * marked, and not a GET answering an array). A mark that cannot be one (not a boolean, not on an
 * integer query parameter, two in one operation) throws, naming where: start-up stops.
 */
export function pageSizeOf(
  method: string,
  query: ReadonlyMap<string, ParameterSpec>,
  ok: ResponseSpec | undefined,
  schemas: Readonly<Record<string, unknown>>,
  where: string,
): PageSize | undefined {
  const marked: string[] = [];
  const unmarked = new Set<string>();
  for (const spec of query.values()) {
    const mark = spec.extensions[PAGE_SIZE_EXTENSION];
    if (mark === undefined) continue;
    const here = `${where}.parameters.${spec.name}: ${PAGE_SIZE_EXTENSION}`;
    if (typeof mark !== "boolean") throw new Error(`${here} must be true or false`);
    if (!mark) {
      unmarked.add(spec.name);
      continue;
    }
    if (spec.type !== "integer") throw new Error(`${here}: the page size must be an integer parameter`);
    marked.push(spec.name);
  }
  if (marked.length > 1) {
    throw new Error(
      `${where}: ${PAGE_SIZE_EXTENSION} marks ${marked.join(" and ")}; an operation has one page size`,
    );
  }
  const [mark] = marked;
  if (mark !== undefined) return { parameter: mark, source: "marked" };
  if (method !== "GET" || ok?.validate === undefined || arrayItemsOf(ok.schema, schemas) === undefined) {
    return undefined;
  }
  const named = [...query.values()].filter(
    (spec) => PAGE_SIZE_NAMES.includes(spec.name) && !unmarked.has(spec.name),
  );
  const fit = named.filter((spec) => spec.type === "integer" && spec.maximum !== undefined);
  const [only, ...others] = fit;
  if (only !== undefined && others.length === 0) return { parameter: only.name, source: "named" };
  const candidates = named.map((spec) => spec.name);
  const reason =
    fit.length > 1
      ? `${fit.map((spec) => spec.name).join(" and ")} each fit the name rule; mark the page size ${PAGE_SIZE_EXTENSION}: true`
      : named.length > 0
        ? `${candidates.join(" and ")}: not an integer with a maximum`
        : `no query parameter marked ${PAGE_SIZE_EXTENSION}, nor an integer one with a maximum named ${PAGE_SIZE_NAMES.join(", ")}`;
  return { parameter: undefined, reason, candidates };
}

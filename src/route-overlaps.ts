// Two templated paths that can match one request (/users/{id}/profile and /users/me/{section}
// both match /users/me/profile): the gateway takes the literal segment, a backend whose router
// takes the first one declared (Express, FastAPI) takes the other. No order suits every backend,
// so such a pair is refused when the operations a method reaches differ in `security` (the
// gateway could let a request reach a private handler without a key), and warned about otherwise.
// A static path beside a template (/pets/findByStatus and /pets/{petId}) is what every backend
// router prefers alike, and stays legal.
import type { Operation } from "./openapi.ts";
import type { OperationSecurity } from "./openapi-security.ts";
import { distinctTemplates, isParam, type RouteTemplate, type Segment } from "./route-template.ts";

export interface RouteOverlap {
  readonly first: RouteTemplate;
  readonly second: RouteTemplate;
  /** A path both match, parameters named as the templates name them: /users/me/profile. */
  readonly example: string;
  /** A method whose operations on the two paths differ in security; undefined when none does. */
  readonly conflict:
    | { readonly method: string; readonly first: Operation; readonly second: Operation }
    | undefined;
}

/** Every pair of templated paths that can match one request, in the document's order. */
export function routeOverlaps(operations: readonly Operation[]): RouteOverlap[] {
  const templated = distinctTemplates(operations).filter((template) => !template.isStatic);
  const overlaps: RouteOverlap[] = [];
  // Quadratic in the templated paths, once at start-up: nothing here runs per request.
  for (const [index, first] of templated.entries()) {
    for (let other = index + 1; other < templated.length; other++) {
      const second = templated[other] as RouteTemplate;
      if (first.segments.length !== second.segments.length) continue;
      const example: string[] = [];
      for (const [position, segment] of first.segments.entries()) {
        const common = commonSegment(segment, second.segments[position] as Segment);
        if (common === undefined) break;
        example.push(common);
      }
      if (example.length !== first.segments.length) continue;
      overlaps.push({ first, second, example: `/${example.join("/")}`, conflict: conflictOf(first, second) });
    }
  }
  return overlaps;
}

/** Refuses a pair whose security differs, naming both paths; returns the pairs it accepts. */
export function refuseSecurityOverlaps(operations: readonly Operation[]): RouteOverlap[] {
  const overlaps = routeOverlaps(operations);
  for (const { first, second, example, conflict } of overlaps) {
    if (conflict === undefined) continue;
    const { method } = conflict;
    throw new Error(
      `paths.${first.path} and paths.${second.path} both match ${method} ${example}, and their security differs ` +
        `(${conflict.first.id}: ${describeSecurity(conflict.first.security)}; ${conflict.second.id}: ${describeSecurity(conflict.second.security)}): ` +
        "the gateway routes the literal segment first, a backend may run the other operation, so who needs a key " +
        "would depend on the backend's router; give both the same security, or paths that cannot match one request",
    );
  }
  return overlaps;
}

/** What a segment of each template would match alike, or undefined when no text matches both. */
function commonSegment(a: Segment, b: Segment): string | undefined {
  if (!isParam(a) && !isParam(b)) return a === b ? a : undefined;
  if (!isParam(a)) return fits(a, b as Exclude<Segment, string>) ? a : undefined;
  if (!isParam(b)) return fits(b, a) ? b : undefined;
  // Two parameters: some text has both literal parts when one prefix starts the other, and one
  // suffix ends the other; the longer of each, around either parameter, is such a text.
  const prefixes = a.prefix.length >= b.prefix.length ? [a.prefix, b.prefix] : [b.prefix, a.prefix];
  const suffixes = a.suffix.length >= b.suffix.length ? [a.suffix, b.suffix] : [b.suffix, a.suffix];
  if (!prefixes[0]?.startsWith(prefixes[1] as string) || !suffixes[0]?.endsWith(suffixes[1] as string))
    return undefined;
  return `${prefixes[0]}{${a.name}}${suffixes[0]}`;
}

function fits(text: string, param: Exclude<Segment, string>): boolean {
  return (
    text.length > param.prefix.length + param.suffix.length &&
    text.startsWith(param.prefix) &&
    text.endsWith(param.suffix)
  );
}

function conflictOf(first: RouteTemplate, second: RouteTemplate): RouteOverlap["conflict"] {
  for (const [method, one] of first.byMethod) {
    const other = second.byMethod.get(method);
    if (other && describeSecurity(one.security) !== describeSecurity(other.security))
      return { method, first: one, second: other };
  }
  return undefined;
}

/**
 * The requirement as the document means it, the same text for the same requirement whatever the
 * order of its alternatives or where it is written. `security: []` on the operation itself (public
 * to the gateway) is told apart from no requirement at all, which the gateway reads as a bearer key.
 */
function describeSecurity({ declaredBy, alternatives }: OperationSecurity): string {
  if (alternatives.length === 0) return declaredBy === "operation" ? "security: []" : "no security";
  return alternatives
    .map((alternative) =>
      alternative.length === 0
        ? "{} (anonymous)"
        : alternative
            .map((scheme) => scheme.name)
            .sort()
            .join(" and "),
    )
    .sort()
    .join(" or ");
}

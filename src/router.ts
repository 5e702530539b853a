// (method, path) -> operation + path parameters, compiled once from the description into a tree.
// The order is the one routers that prefer the most specific route keep (Spring, find-my-way),
// never the document's: a static path first; then, segment by segment from the left, a literal
// segment before a parameter inside literal text ({name}.json) before a whole parameter. A route
// that matches the path but lacks the method gives way to the next one that matches, and 405
// comes only when none has it. Which of two matching templates a backend runs is its own router's
// choice: route-overlaps.ts refuses the pairs where that choice would decide who needs a key.
import type { Operation } from "./openapi.ts";
import { distinctTemplates, isParam, type RouteTemplate } from "./route-template.ts";

export type RouteMatch =
  | { readonly kind: "operation"; readonly operation: Operation; readonly pathParams: Record<string, string> }
  | { readonly kind: "method-not-allowed"; readonly allow: string }
  | { readonly kind: "not-found" };

interface Route {
  readonly byMethod: ReadonlyMap<string, Operation>;
  /** Where each parameter sits: its segment, and the literal text around it there. */
  readonly params: readonly {
    readonly name: string;
    readonly at: number;
    readonly prefix: number;
    readonly suffix: number;
  }[];
  /** The 405 when this route is the only one that matches the path. */
  readonly notAllowed: RouteMatch;
}

interface PartialChild {
  readonly prefix: string;
  readonly suffix: string;
  readonly node: Node;
}

interface Node {
  readonly literals: Map<string, Node>;
  /** Longest literal text first: the most specific of them is tried first. */
  readonly partials: PartialChild[];
  param: Node | undefined;
  route: Route | undefined;
}

const NOT_FOUND: RouteMatch = Object.freeze({ kind: "not-found" });
const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;
/** What a walk finds when routes match the path but none has the method (never answered as is). */
const MISSED: RouteMatch = Object.freeze({ kind: "method-not-allowed", allow: "" });

export interface Router {
  /** path is the public path including the base path, without query. */
  match(method: string, path: string): RouteMatch;
}

/** Throws when two paths are one template, or a segment cannot be matched as written. */
export function createRouter(basePath: string, operations: readonly Operation[]): Router {
  const root = newNode();
  const templates = distinctTemplates(operations);
  const routes = templates.map((template) => insert(root, template));
  const depth = Math.max(...templates.map((template) => template.segments.length));
  // A static path that no template matches answers a method it lacks with its own 405 at once.
  const staticRoutes = new Map<string, { readonly route: Route; readonly alone: boolean }>();
  for (const [index, template] of templates.entries()) {
    if (!template.isStatic) continue;
    const route = routes[index] as Route;
    const matched: Route[] = [];
    visit(root, 0, template.segments as string[], "", matched);
    staticRoutes.set(basePath + template.path, { route, alone: matched.length === 1 });
  }
  const prefix = `${basePath}/`;

  return {
    match(method, path) {
      const exact = staticRoutes.get(path);
      if (exact) {
        const operation = exact.route.byMethod.get(method);
        if (operation) return { kind: "operation", operation, pathParams: NO_PARAMS };
        if (exact.alone) return exact.route.notAllowed;
      }
      if (!path.startsWith(prefix)) return NOT_FOUND;
      // One more than the deepest route: a longer path is told apart without splitting all of it.
      const parts = path.slice(prefix.length).split("/", depth + 1);
      if (parts.length > depth) return NOT_FOUND;
      const found = visit(root, 0, parts, method, undefined);
      if (found === undefined) return NOT_FOUND;
      if (found !== MISSED) return found;
      // Routes match but none has the method: a second walk gathers them for Allow.
      const matched: Route[] = [];
      visit(root, 0, parts, method, matched);
      return notAllowed(matched);
    },
  };
}

function newNode(): Node {
  return { literals: new Map(), partials: [], param: undefined, route: undefined };
}

function insert(root: Node, template: RouteTemplate): Route {
  let node = root;
  for (const segment of template.segments) {
    if (!isParam(segment)) {
      const next = node.literals.get(segment) ?? newNode();
      node.literals.set(segment, next);
      node = next;
    } else if (segment.prefix === "" && segment.suffix === "") {
      node.param ??= newNode();
      node = node.param;
    } else {
      let child = node.partials.find((p) => p.prefix === segment.prefix && p.suffix === segment.suffix);
      if (!child) {
        child = { prefix: segment.prefix, suffix: segment.suffix, node: newNode() };
        node.partials.push(child);
        // Stable: between two of one length, the document's order.
        node.partials.sort((a, b) => b.prefix.length + b.suffix.length - (a.prefix.length + a.suffix.length));
      }
      node = child.node;
    }
  }
  const params = template.segments.flatMap((segment, at) =>
    isParam(segment)
      ? [{ name: segment.name, at, prefix: segment.prefix.length, suffix: segment.suffix.length }]
      : [],
  );
  const notAllowed: RouteMatch = Object.freeze({
    kind: "method-not-allowed",
    allow: allowOf([template.byMethod]),
  });
  const route: Route = { byMethod: template.byMethod, params, notAllowed };
  // distinctTemplates refused two paths of one shape, so each route has a node of its own.
  node.route = route;
  return route;
}

/**
 * The first route, most specific child first, that matches the parts and has the method; MISSED
 * when only routes without the method match, which `matched` (when given) then holds. Depth-first:
 * each node of the tree is visited once at most, so the work is bounded by the path's segments
 * and the document, whatever the client sends.
 */
function visit(
  node: Node,
  index: number,
  parts: readonly string[],
  method: string,
  matched: Route[] | undefined,
): RouteMatch | undefined {
  if (index === parts.length) {
    const route = node.route;
    if (route === undefined) return undefined;
    const operation = route.byMethod.get(method);
    if (operation) return { kind: "operation", operation, pathParams: paramsOf(route, parts) };
    matched?.push(route);
    return MISSED;
  }
  let missed: RouteMatch | undefined;
  const part = parts[index] as string;
  const literal = node.literals.size === 0 ? undefined : node.literals.get(part);
  if (literal) {
    const found = visit(literal, index + 1, parts, method, matched);
    if (found !== undefined && found !== MISSED) return found;
    missed ??= found;
  }
  // A parameter is never empty: /pets/ is not /pets/{petId}.
  if (part === "") return missed;
  for (let i = 0; i < node.partials.length; i++) {
    const { prefix, suffix, node: child } = node.partials[i] as PartialChild;
    if (part.length <= prefix.length + suffix.length || !part.startsWith(prefix) || !part.endsWith(suffix))
      continue;
    const found = visit(child, index + 1, parts, method, matched);
    if (found !== undefined && found !== MISSED) return found;
    missed ??= found;
  }
  if (node.param === undefined) return missed;
  return visit(node.param, index + 1, parts, method, matched) ?? missed;
}

/** 405 with the methods of every route that matched (one at least). */
function notAllowed(matched: readonly Route[]): RouteMatch {
  if (matched.length === 1) return (matched[0] as Route).notAllowed;
  return { kind: "method-not-allowed", allow: allowOf(matched.map((route) => route.byMethod)) };
}

function allowOf(routes: readonly ReadonlyMap<string, Operation>[]): string {
  return [...new Set(routes.flatMap((byMethod) => [...byMethod.keys()]))].sort().join(", ");
}

function paramsOf(route: Route, parts: readonly string[]): Record<string, string> {
  if (route.params.length === 0) return NO_PARAMS;
  const values: Record<string, string> = {};
  for (const { name, at, prefix, suffix } of route.params) {
    const part = parts[at] as string;
    values[name] = part.slice(prefix, part.length - suffix);
  }
  return values;
}

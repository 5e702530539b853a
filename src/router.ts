// (method, path) -> operation + path parameters, compiled once from the description.
import type { Operation } from "./openapi.ts";

export type RouteMatch =
  | { readonly kind: "operation"; readonly operation: Operation; readonly pathParams: Record<string, string> }
  | { readonly kind: "method-not-allowed"; readonly allow: string }
  | { readonly kind: "not-found" };

interface Route {
  readonly segments: readonly (string | { readonly param: string })[];
  readonly byMethod: ReadonlyMap<string, Operation>;
  readonly allow: string;
}

const NOT_FOUND: RouteMatch = Object.freeze({ kind: "not-found" });
const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export interface Router {
  /** path is the public path including the base path, without query. */
  match(method: string, path: string): RouteMatch;
}

export function createRouter(basePath: string, operations: readonly Operation[]): Router {
  const grouped = new Map<string, Map<string, Operation>>();
  for (const operation of operations) {
    const methods = grouped.get(operation.path) ?? new Map<string, Operation>();
    methods.set(operation.method, operation);
    grouped.set(operation.path, methods);
  }
  const staticRoutes = new Map<string, Route>();
  const templatedRoutes: Route[] = [];
  for (const [template, byMethod] of grouped) {
    // HEAD follows GET unless the document declares HEAD itself.
    const get = byMethod.get("GET");
    if (get && !byMethod.has("HEAD")) byMethod.set("HEAD", get);
    const segments = template
      .slice(1)
      .split("/")
      .map((segment) => (/^\{[^}]+\}$/.test(segment) ? { param: segment.slice(1, -1) } : segment));
    const route: Route = { segments, byMethod, allow: [...byMethod.keys()].sort().join(", ") };
    if (segments.every((segment) => typeof segment === "string"))
      staticRoutes.set(basePath + template, route);
    else templatedRoutes.push(route);
  }

  const resolve = (route: Route, method: string, pathParams: Record<string, string>): RouteMatch => {
    const operation = route.byMethod.get(method);
    return operation
      ? { kind: "operation", operation, pathParams }
      : { kind: "method-not-allowed", allow: route.allow };
  };

  return {
    match(method, path) {
      const exact = staticRoutes.get(path);
      if (exact) return resolve(exact, method, NO_PARAMS);
      if (templatedRoutes.length === 0 || !path.startsWith(`${basePath}/`)) return NOT_FOUND;
      const parts = path.slice(basePath.length + 1).split("/");
      for (const route of templatedRoutes) {
        if (route.segments.length !== parts.length) continue;
        let pathParams: Record<string, string> | undefined = {};
        for (let i = 0; i < parts.length; i++) {
          const segment = route.segments[i];
          const part = parts[i] as string;
          if (typeof segment === "string") {
            if (segment !== part) {
              pathParams = undefined;
              break;
            }
          } else if (segment === undefined || part === "") {
            pathParams = undefined;
            break;
          } else pathParams[segment.param] = part;
        }
        if (pathParams) return resolve(route, method, pathParams);
      }
      return NOT_FOUND;
    },
  };
}

// A path of the description as the router reads it: segments, each a literal, a whole parameter
// ({petId}) or a parameter inside literal text ({name}.json, {id}:cancel). What the router could
// only match by guessing is refused here, at start-up, never read as literal text: a segment with
// two parameters ({name}.{ext}, which backends split differently), or a brace out of place.
import type { Operation } from "./openapi.ts";

export interface Param {
  readonly name: string;
  /** The literal text before and after the parameter in its segment ("" for a whole-segment one). */
  readonly prefix: string;
  readonly suffix: string;
}

export type Segment = string | Param;

/** One path of the description and its operations by method (HEAD following GET). */
export interface RouteTemplate {
  readonly path: string;
  readonly segments: readonly Segment[];
  readonly byMethod: ReadonlyMap<string, Operation>;
  /** No parameter anywhere: matched by the whole path, before any template. */
  readonly isStatic: boolean;
  /** The path with every parameter's name left out: two templates with one shape are the same template. */
  readonly shape: string;
}

/** The segments of a path as the description writes it (it starts with /); throws naming the segment. */
export function parseTemplate(path: string): Segment[] {
  return path
    .slice(1)
    .split("/")
    .map((segment) => {
      const open = segment.indexOf("{");
      const close = segment.indexOf("}");
      if (open === -1 && close === -1) return segment;
      const name = segment.slice(open + 1, close);
      const prefix = segment.slice(0, open);
      const suffix = segment.slice(close + 1);
      if (open === -1 || close < open || name === "" || name.includes("{")) {
        throw new Error(`paths.${path}: the segment "${segment}" has a brace out of place`);
      }
      if (suffix.includes("{") || suffix.includes("}")) {
        throw new Error(
          `paths.${path}: the segment "${segment}" holds more than one parameter, which backends split differently; the gateway routes one parameter per segment`,
        );
      }
      return { name, prefix, suffix };
    });
}

export function isParam(segment: Segment | undefined): segment is Param {
  return typeof segment === "object";
}

/** The description's paths, in its order, each with its operations by method. */
export function routeTemplates(operations: readonly Operation[]): RouteTemplate[] {
  const grouped = new Map<string, Map<string, Operation>>();
  for (const operation of operations) {
    const methods = grouped.get(operation.path) ?? new Map<string, Operation>();
    methods.set(operation.method, operation);
    grouped.set(operation.path, methods);
  }
  return [...grouped].map(([path, byMethod]) => {
    // HEAD follows GET unless the document declares HEAD itself.
    const get = byMethod.get("GET");
    if (get && !byMethod.has("HEAD")) byMethod.set("HEAD", get);
    const segments = parseTemplate(path);
    return {
      path,
      segments,
      byMethod,
      isStatic: !segments.some(isParam),
      // Literal text holds no brace (parseTemplate), so "{}" stands for a parameter unambiguously.
      shape: segments.map((s) => (isParam(s) ? `${s.prefix}{}${s.suffix}` : s)).join("/"),
    };
  });
}

/** Refuses two paths that are one template (OpenAPI: they must not exist); returns the templates. */
export function distinctTemplates(operations: readonly Operation[]): RouteTemplate[] {
  const templates = routeTemplates(operations);
  const byShape = new Map<string, RouteTemplate>();
  for (const template of templates) {
    const first = byShape.get(template.shape);
    if (first) {
      throw new Error(
        `paths.${first.path} and paths.${template.path} are the same template with other parameter names, which OpenAPI forbids: a request matching one matches the other`,
      );
    }
    byShape.set(template.shape, template);
  }
  return templates;
}

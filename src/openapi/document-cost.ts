// What a document may cost the gateway to compile, checked before it is compiled. Its size in
// bytes is bounded when it is read, but bytes are not the cost: a few YAML aliases that each name a
// large schema stand for copies of it (99 aliases of a 1.3 MB schema ran for over 11 minutes and
// took 3.5 GB), and 17,000 plain operations took 35-39 s and 1.6 GB in an outside review. So the
// values of the document are counted as the compiler will walk them, an alias (or a $ref put in
// place) once per place it is used, and the count stops at the first bound it passes: the check
// costs at most its bound.
import { isJsonObject } from "./json-object.ts";

/** Values in the document with its aliases expanded: several times what a 5 MB description holds. */
export const MAX_DOCUMENT_VALUES = 1_000_000;
/** Operations: well above the largest public APIs (about a thousand); each costs its validators. */
export const MAX_OPERATIONS = 2_000;
/**
 * Values inside schemas (components.schemas and every `schema`): what ajv compiles, at a cost that
 * grows faster than their count (one schema of 48,000 values took 4.4 s of CPU and 775 MB).
 */
export const MAX_SCHEMA_VALUES = 50_000;

const HTTP_METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);

/**
 * Refuses a parsed file or document holding more than MAX_DOCUMENT_VALUES values once its
 * aliases are expanded. `name` is how the message calls it.
 */
export function checkExpandedSize(value: unknown, name: string): void {
  countValues(value, false, name);
}

/** Refuses a whole document (after its $refs to other files are bundled) over any of the bounds. */
export function checkDocumentCost(document: Record<string, unknown>): void {
  const paths = isJsonObject(document.paths) ? document.paths : {};
  let operations = 0;
  for (const item of Object.values(paths)) {
    if (!isJsonObject(item)) continue;
    for (const key of Object.keys(item)) if (HTTP_METHODS.has(key)) operations++;
  }
  if (operations > MAX_OPERATIONS) {
    throw new Error(
      `the document has ${operations} operations, more than the ${MAX_OPERATIONS} the gateway compiles at most`,
    );
  }
  countValues(document, true, "the document");
}

/** Flags of a value on the count's stack. */
const IN_SCHEMA = 1;
const COMPONENTS = 2;

/**
 * Counts values depth-first with a stack of its own (no recursion: a deep document needs no deep
 * stack), a shared object once per place it appears, stopping at the bound. Two flat stacks, not
 * an object per value: the count is most of what refusing a costly document takes.
 */
function countValues(root: unknown, schemas: boolean, name: string): void {
  const values: unknown[] = [root];
  const flags: number[] = [0];
  let count = 0;
  let schemaCount = 0;
  while (values.length > 0) {
    const value = values.pop();
    const flag = flags.pop() as number;
    if (++count > MAX_DOCUMENT_VALUES) {
      throw new Error(
        `${name} holds more than ${MAX_DOCUMENT_VALUES} values with its YAML aliases and $refs expanded: each alias counts as a copy of what it names`,
      );
    }
    if (schemas && flag & IN_SCHEMA && ++schemaCount > MAX_SCHEMA_VALUES) {
      throw new Error(
        `the document's schemas hold more than ${MAX_SCHEMA_VALUES} values with their aliases and $refs expanded`,
      );
    }
    if (value === null || typeof value !== "object") continue;
    if (Array.isArray(value)) {
      const inherited = flag & IN_SCHEMA;
      for (const item of value) {
        values.push(item);
        flags.push(inherited);
      }
      continue;
    }
    const object = value as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      values.push(object[key]);
      // Everything under a `schema`, or under components.schemas, is a schema's.
      let childFlag = flag & IN_SCHEMA;
      if (key === "schema" || (flag & COMPONENTS && key === "schemas")) childFlag = IN_SCHEMA;
      if (value === root && key === "components") childFlag |= COMPONENTS;
      flags.push(childFlag);
    }
  }
}

// Where a pattern sits in the document, for the line that refuses it: ajv hands the engine a
// pattern's text only, and the author needs the place to fix.
import { escapePointerToken } from "../json/pointer.ts";
import type { Json } from "./json-object.ts";

/** The JSON pointers (`#/components/...`) of every `pattern` or `patternProperties` name equal to `pattern`. */
export function patternPointers(document: Json, pattern: string): string[] {
  const found: string[] = [];
  const visit = (value: Json, pointer: string): void => {
    if (value === null || typeof value !== "object") return;
    const entries = Array.isArray(value)
      ? value.map((item, index) => [String(index), item] as const)
      : Object.entries(value);
    for (const [key, child] of entries) {
      const here = `${pointer}/${escapePointerToken(key)}`;
      if (key === "pattern" && child === pattern) found.push(here);
      if (
        key === "patternProperties" &&
        child !== null &&
        typeof child === "object" &&
        !Array.isArray(child)
      ) {
        for (const name of Object.keys(child))
          if (name === pattern) found.push(`${here}/${escapePointerToken(name)}`);
      }
      visit(child, here);
    }
  };
  visit(document, "#");
  return found;
}

// Member names given twice. JSON.parse keeps the last; a backend's parser may keep the first: the
// body it acts on would not be the body the gateway validated.
import { clientPointerSegment } from "./pointer.ts";

/** The first member name given twice in one object, as a pointer ("/name"), of a text JSON.parse accepted. */
export function duplicateKey(text: string): string | undefined {
  // One entry per open container: the names seen so far in an object, the index in an array;
  // and, for an object, the member being read. The pointer is only spelled out for a duplicate:
  // escaping every member name of every valid body was work no request needed.
  const open: (Set<string> | number)[] = [];
  const names: string[] = [];
  let expectName = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      const start = i;
      let escaped = false;
      for (i++; text.charCodeAt(i) !== 34; i++) {
        if (text.charCodeAt(i) === 92 /* \ */) {
          escaped = true;
          i++;
        }
      }
      if (!expectName) continue;
      const name = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
      const seen = open[open.length - 1] as Set<string>;
      if (seen.has(name)) return `${pointerTo(open, names)}${clientPointerSegment(name)}`;
      seen.add(name);
      names[names.length - 1] = name;
      expectName = false;
    } else if (c === 123 /* { */) {
      open.push(new Set());
      names.push("");
      expectName = true;
    } else if (c === 91 /* [ */) {
      open.push(0);
      names.push("");
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      open.pop();
      names.pop();
      expectName = false;
    } else if (c === 44 /* , */) {
      const top = open[open.length - 1];
      if (typeof top === "number") open[open.length - 1] = top + 1;
      else expectName = true;
    }
  }
  return undefined;
}

/** The pointer of the innermost open container, from duplicateKey's stacks. */
function pointerTo(open: readonly (Set<string> | number)[], names: readonly string[]): string {
  let pointer = "";
  for (let depth = 0; depth < open.length - 1; depth++) {
    const entry = open[depth];
    pointer += typeof entry === "number" ? `/${entry}` : clientPointerSegment(names[depth] as string);
  }
  return pointer;
}

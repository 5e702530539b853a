// A document split over several files becomes one: every $ref to another file is resolved at
// start-up and folded into the document, so that the compiler downstream sees only local refs.
// Only files inside the document's own folder are read, and nothing is ever fetched: a document
// is the operator's, but a $ref must not turn the gateway into a reader of /etc or a client of
// some host at start-up.
//
// A schema that another file holds is copied once into components.schemas under a name of its
// own and referred to there, so that a recursive schema stays recursive and a schema used many
// times is compiled once. Any other object (a path item, a parameter, a response) is put in
// place of its $ref, once per target, and a cycle among those is refused. The work is linear in
// the files read: each file is parsed once, each target is copied once.
import { realpathSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { escapePointerToken, unescapePointerToken } from "../json/pointer.ts";
import { isJsonObject } from "./json-object.ts";

type JsonObject = { [key: string]: unknown };
export type ReadFile = (file: string, name: string) => unknown;
/** Where a path leads once every symbolic link on it is followed (fs.realpathSync; a reload replays a recorded one). */
export type RealPath = (path: string) => string;

/**
 * What a reader or realpath throws for a file it has not reached yet (a reload reads the files
 * asynchronously, then bundles again: document-source.ts); passed through, never said as "no file".
 */
export class PendingFile extends Error {
  readonly kind: "read" | "realpath";
  readonly path: string;
  /** How a message calls the file. */
  readonly label: string;
  constructor(kind: "read" | "realpath", path: string, label = path) {
    super(`${kind} ${path} is pending`);
    this.kind = kind;
    this.path = path;
    this.label = label;
  }
}

/** More files than a split document needs; the bound that keeps start-up's reading finite. */
export const MAX_REFERENCED_FILES = 64;
/** Objects other than schemas that refer to objects in other files, one inside the next. */
const MAX_INLINE_DEPTH = 32;

/** Where a $ref is read: the file it is written in, and whether it stands for a schema. */
interface Place {
  readonly file: string;
  readonly schema: boolean;
}

/** Keywords whose value is data, not schemas: a "$ref" member there is an example's text. */
const SCHEMA_DATA_KEYWORDS = new Set(["example", "examples", "default", "enum", "const"]);
/** Keywords whose value maps names to schemas: a member named "$ref" there is a property. */
const SCHEMA_MAP_KEYWORDS = new Set([
  "properties",
  "patternProperties",
  "$defs",
  "definitions",
  "dependentSchemas",
]);
/** Members of the document's objects whose value is data (an example's value). */
const DOCUMENT_DATA_MEMBERS = new Set(["example", "value"]);

/** The document of `file`, its $refs to other files resolved into it. */
export function bundleExternalRefs(file: string, read: ReadFile, realpath: RealPath = realpathSync): unknown {
  return new Bundle(file, read, realpath).document;
}

class Bundle {
  readonly document: unknown;
  readonly #read: ReadFile;
  readonly #realpath: RealPath;
  readonly #rootFile: string;
  readonly #folder: string;
  readonly #files = new Map<string, unknown>();
  /** "file#pointer" of a schema another file holds -> its name in components.schemas. */
  readonly #schemaNames = new Map<string, string>();
  readonly #usedNames = new Set<string>();
  /** Schemas copied in, still to be walked: a queue, so that a long chain of files needs no deep stack. */
  readonly #pending: { name: string; ref: string; file: string; pointer: string }[] = [];
  readonly #hoisted: JsonObject = {};
  /** "file#pointer" of objects put in place of their $ref: done, or being done (a cycle). */
  readonly #inlined = new Map<string, unknown>();
  readonly #inlining: string[] = [];

  constructor(file: string, read: ReadFile, realpath: RealPath) {
    this.#read = read;
    this.#realpath = realpath;
    this.#rootFile = realpath(file);
    this.#folder = dirname(this.#rootFile);
    const root = read(this.#rootFile, "the file");
    this.#files.set(this.#rootFile, root);
    if (!isJsonObject(root)) {
      this.document = root;
      return;
    }
    const components = isJsonObject(root.components) ? root.components : undefined;
    const schemas = components && isJsonObject(components.schemas) ? components.schemas : {};
    for (const name of Object.keys(schemas)) this.#usedNames.add(name);
    // An entry that only refers to another file (`Pet: {$ref: ./pet.yaml}`) names that schema,
    // wherever else it is referred to from.
    const entriesElsewhere = new Map<string, { file: string; pointer: string; ref: string }>();
    for (const [name, schema] of Object.entries(schemas)) {
      const ref = isJsonObject(schema) && Object.keys(schema).length === 1 ? schema.$ref : undefined;
      if (typeof ref !== "string") continue;
      const target = this.#target(ref, { file: this.#rootFile, schema: true });
      if (target.file === this.#rootFile || this.#schemaNames.has(target.key)) continue;
      this.#schemaNames.set(target.key, name);
      entriesElsewhere.set(name, { ...target, ref });
    }
    const document: JsonObject = {};
    for (const [key, value] of Object.entries(root)) {
      document[key] =
        key === "components" ? value : this.#walk(value, { file: this.#rootFile, schema: false });
    }
    if (components) {
      const walked: JsonObject = {};
      for (const [kind, entries] of Object.entries(components)) {
        walked[kind] =
          kind === "schemas" && isJsonObject(entries)
            ? this.#walkComponentSchemas(entries, entriesElsewhere)
            : this.#walk(entries, { file: this.#rootFile, schema: false });
      }
      document.components = walked;
    }
    this.#drainPending();
    if (Object.keys(this.#hoisted).length > 0) {
      const walked = (document.components ?? {}) as JsonObject;
      walked.schemas = { ...((walked.schemas as JsonObject | undefined) ?? {}), ...this.#hoisted };
      document.components = walked;
    }
    this.document = document;
  }

  /** components.schemas of the document itself; an entry that is another file's schema becomes that schema. */
  #walkComponentSchemas(
    schemas: JsonObject,
    elsewhere: ReadonlyMap<string, { file: string; pointer: string; ref: string }>,
  ): JsonObject {
    const out: JsonObject = {};
    for (const [name, schema] of Object.entries(schemas)) {
      const target = elsewhere.get(name);
      out[name] =
        target === undefined
          ? this.#walk(schema, { file: this.#rootFile, schema: true })
          : this.#walk(this.#valueAt(target, target.ref), { file: target.file, schema: true });
    }
    return out;
  }

  #walk(value: unknown, place: Place): unknown {
    if (Array.isArray(value)) return value.map((item) => this.#walk(item, place));
    if (!isJsonObject(value)) return value;
    if (typeof value.$ref === "string") {
      const replaced = this.#followRef(value, value.$ref, place);
      if (replaced !== undefined) return replaced;
    }
    const out: JsonObject = {};
    for (const [key, child] of Object.entries(value)) {
      if (key.startsWith("x-")) out[key] = child;
      else if (place.schema) {
        if (SCHEMA_DATA_KEYWORDS.has(key)) out[key] = child;
        else if (SCHEMA_MAP_KEYWORDS.has(key) && isJsonObject(child)) {
          const map: JsonObject = {};
          for (const [name, schema] of Object.entries(child)) map[name] = this.#walk(schema, place);
          out[key] = map;
        } else out[key] = this.#walk(child, place);
      } else if (DOCUMENT_DATA_MEMBERS.has(key)) out[key] = child;
      else out[key] = this.#walk(child, key === "schema" ? { ...place, schema: true } : place);
    }
    return out;
  }

  /**
   * What stands for `{$ref}` once bundled: the same object with its $ref rewritten (a schema),
   * the target itself (anything else in another file), or undefined to keep it as written (a
   * local $ref of the document itself).
   */
  #followRef(object: JsonObject, ref: string, place: Place): unknown {
    const target = this.#target(ref, place);
    const rewritten = (local: string): JsonObject => {
      const out: JsonObject = {};
      for (const [key, child] of Object.entries(object)) {
        out[key] = key === "$ref" ? local : this.#walk(child, place);
      }
      return out;
    };
    if (target.file === this.#rootFile) {
      // Aimed at the document: kept, or said from the document when written elsewhere or with the document's name.
      return ref.startsWith("#") && place.file === this.#rootFile
        ? undefined
        : rewritten(`#${target.fragment}`);
    }
    if (place.schema) {
      let name = this.#schemaNames.get(target.key);
      if (name === undefined) {
        name = this.#newName(target);
        this.#schemaNames.set(target.key, name);
        this.#pending.push({ name, ref, file: target.file, pointer: target.pointer });
      }
      return rewritten(`#/components/schemas/${escapePointerToken(name)}`);
    }
    const done = this.#inlined.get(target.key);
    if (done !== undefined) return done;
    if (this.#inlining.includes(target.key)) {
      const cycle = [...this.#inlining, target.key].map((key) => {
        const hash = key.indexOf("#");
        return `${this.#nameOf(key.slice(0, hash))}${key.slice(hash)}`;
      });
      throw new Error(`$ref ${ref} is part of a cycle (${cycle.join(" -> ")})`);
    }
    if (this.#inlining.length >= MAX_INLINE_DEPTH) {
      throw new Error(`$ref ${ref}: objects refer to other files more than ${MAX_INLINE_DEPTH} levels deep`);
    }
    this.#inlining.push(target.key);
    const value = this.#walk(this.#valueAt(target, ref), { file: target.file, schema: false });
    this.#inlining.pop();
    this.#inlined.set(target.key, value);
    return value;
  }

  #drainPending(): void {
    for (let next = this.#pending.shift(); next !== undefined; next = this.#pending.shift()) {
      const target = { file: next.file, pointer: next.pointer, key: `${next.file}#${next.pointer}` };
      this.#hoisted[next.name] = this.#walk(this.#valueAt(target, next.ref), {
        file: next.file,
        schema: true,
      });
    }
  }

  /** The file and JSON pointer a $ref names, refused when it is a URL or leaves the document's folder. */
  #target(ref: string, place: Place): { file: string; fragment: string; pointer: string; key: string } {
    const hash = ref.indexOf("#");
    const location = hash === -1 ? ref : ref.slice(0, hash);
    const fragment = hash === -1 ? "" : ref.slice(hash + 1);
    if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(location) || location.startsWith("//")) {
      const reason = /^(?:https?:)?\/\//i.test(location)
        ? "is a URL, and the gateway never fetches one: save that file next to the document and refer to it by a relative path"
        : "is not a relative file path";
      throw new Error(`$ref ${ref} in ${this.#nameOf(place.file)} ${reason}`);
    }
    let pointer: string;
    try {
      pointer = decodeURIComponent(fragment);
    } catch {
      throw new Error(
        `$ref ${ref} in ${this.#nameOf(place.file)}: its fragment is not valid percent-encoding`,
      );
    }
    if (pointer !== "" && !pointer.startsWith("/")) {
      throw new Error(
        `$ref ${ref} in ${this.#nameOf(place.file)}: only JSON pointers (#/...) are read after the #`,
      );
    }
    const file = location === "" ? place.file : this.#fileOf(location, ref, place);
    return { file, fragment, pointer, key: `${file}#${pointer}` };
  }

  #fileOf(location: string, ref: string, place: Place): string {
    let path: string;
    try {
      path = decodeURI(location);
    } catch {
      throw new Error(`$ref ${ref} in ${this.#nameOf(place.file)}: its path is not valid percent-encoding`);
    }
    const lexical = resolve(dirname(place.file), path);
    if (!this.#inside(lexical)) {
      throw new Error(
        `$ref ${ref} in ${this.#nameOf(place.file)} leaves the document's folder ${this.#folder}`,
      );
    }
    let file: string;
    try {
      file = this.#realpath(lexical);
    } catch (error) {
      if (error instanceof PendingFile) throw error;
      throw new Error(`$ref ${ref} in ${this.#nameOf(place.file)}: no file ${this.#nameOf(lexical)}`);
    }
    // A symbolic link inside the folder may still point out of it.
    if (!this.#inside(file)) {
      throw new Error(
        `$ref ${ref} in ${this.#nameOf(place.file)} leaves the document's folder ${this.#folder}`,
      );
    }
    return file;
  }

  #inside(file: string): boolean {
    const path = relative(this.#folder, file);
    return path !== "" && !isAbsolute(path) && path !== ".." && !path.startsWith(`..${sep}`);
  }

  #valueAt(target: { file: string; pointer: string }, ref: string): unknown {
    let node = this.#load(target.file);
    if (target.pointer === "") return node;
    for (const token of target.pointer.slice(1).split("/").map(unescapePointerToken)) {
      if (Array.isArray(node) && /^(?:0|[1-9][0-9]*)$/.test(token) && Number(token) < node.length) {
        node = node[Number(token)];
      } else if (isJsonObject(node) && Object.hasOwn(node, token)) {
        node = node[token];
      } else {
        throw new Error(`$ref ${ref}: ${this.#nameOf(target.file)} has nothing at ${target.pointer}`);
      }
    }
    return node;
  }

  #load(file: string): unknown {
    if (this.#files.has(file)) return this.#files.get(file);
    if (this.#files.size >= MAX_REFERENCED_FILES) {
      throw new Error(`the document refers to more than ${MAX_REFERENCED_FILES - 1} other files`);
    }
    const value = this.#read(file, this.#nameOf(file));
    this.#files.set(file, value);
    return value;
  }

  /** A name in components.schemas for a schema from another file: its last pointer token, or the file's name. */
  #newName(target: { file: string; pointer: string }): string {
    const last =
      target.pointer.split("/").pop() || (target.file.split(sep).pop() ?? "").replace(/\.[^.]*$/, "");
    const base = unescapePointerToken(last).replace(/[^\w.-]/g, "_") || "Schema";
    let name = base;
    for (let n = 2; this.#usedNames.has(name); n++) name = `${base}_${n}`;
    this.#usedNames.add(name);
    return name;
  }

  #nameOf(file: string): string {
    return file === this.#rootFile ? "the document" : relative(this.#folder, file);
  }
}

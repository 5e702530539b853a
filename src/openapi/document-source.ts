// The document's files as one snapshot: every file the document and its $refs name, read once,
// as text, with where each path led (symbolic links followed) and the SHA-256 of the whole. A
// reload compiles a snapshot, never the files themselves twice: a cluster primary reads and
// hashes, and every worker compiles the same bytes (a worker started later gets them too), so
// no two processes can serve two versions because a file changed between their reads.
//
// Reading is asynchronous, on libuv's pool: a reload runs while requests are served, and a file
// on a hung mount must not stop the event loop (src/trusted-file.ts). The $refs are found by the
// bundle itself (bundle-refs.ts): it is run on what has been read so far, and where it asks for a
// file not yet read, that file is read and the bundle run again; each file is parsed once.
import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { realpath } from "node:fs/promises";
import { relative } from "node:path";
import { readTrustedFile, readTrustedFileSync, SLOW_READ_MS } from "../trusted-file.ts";
import { MAX_REFERENCED_FILES, PendingFile } from "./bundle-refs.ts";
import {
  type DocumentFiles,
  MAX_DOCUMENT_BYTES,
  parseDocumentFile,
  readApiDocument,
} from "./read-document.ts";

/** The files of one version of the document: plain JSON, as IPC carries it. */
export interface DocumentSource {
  /** The document's path as configured. */
  readonly file: string;
  /** Each path the bundle followed, and the path it led to (null: none). */
  readonly realpaths: readonly (readonly [string, string | null])[];
  /** Each file read (by the path it led to), and its text. */
  readonly texts: readonly (readonly [string, string])[];
  /**
   * SHA-256, hex: of the file, for a document in one file (what `sha256sum` prints); else of
   * every file's path (relative to the document's folder) and text, in the order read.
   */
  readonly sha256: string;
}

/** A snapshot and the document bundled from it (what the reader made of the files, ready to compile). */
export interface ReadSource {
  readonly source: DocumentSource;
  readonly document: unknown;
}

/** Reads the document of `file` and every file it refers to; throws what loading it would. */
export async function readDocumentSource(file: string): Promise<ReadSource> {
  const steps = sourceSteps(file);
  for (let step = steps.next(); ; ) {
    if (step.done) return step.value;
    const pending = step.value;
    if (pending.kind === "realpath") step = steps.next(await realpath(pending.path).catch(() => null));
    else {
      const { text } = await readTrustedFile(pending.path, {
        maxBytes: MAX_DOCUMENT_BYTES,
        name: pending.label,
        slowAfterMs: SLOW_READ_MS,
      });
      step = steps.next(text ?? "");
    }
  }
}

/** The same, read at once: for start-up, which has nothing else to do meanwhile. */
export function readDocumentSourceSync(file: string): ReadSource {
  const steps = sourceSteps(file);
  for (let step = steps.next(); ; ) {
    if (step.done) return step.value;
    const pending = step.value;
    if (pending.kind === "realpath") {
      let found: string | null;
      try {
        found = realpathSync(pending.path);
      } catch {
        found = null;
      }
      step = steps.next(found);
    } else
      step = steps.next(
        readTrustedFileSync(pending.path, { maxBytes: MAX_DOCUMENT_BYTES, name: pending.label }).text,
      );
  }
}

/**
 * The reading, as steps: each yields the path it needs next (its realpath, or its text) and is
 * given it back. Each round reads one more path: the root's realpath and text, then two per file
 * referred to.
 */
function* sourceSteps(file: string): Generator<PendingFile, ReadSource, string | null> {
  const realpaths = new Map<string, string | null>();
  const texts = new Map<string, string>();
  const parsed = new Map<string, unknown>();
  const files: DocumentFiles = {
    realpath(path) {
      const found = realpaths.get(path);
      if (found === undefined) throw new PendingFile("realpath", path);
      if (found === null) throw new Error(`no file ${path}`);
      return found;
    },
    read(path, name) {
      if (parsed.has(path)) return parsed.get(path);
      const text = texts.get(path);
      if (text === undefined) throw new PendingFile("read", path, name);
      // The bundle copies what it walks: a parsed file is reused as it is by the next round.
      const value = parseDocumentFile(text, name);
      parsed.set(path, value);
      return value;
    },
  };
  for (let round = 0; round <= 2 * (MAX_REFERENCED_FILES + 1); round++) {
    let pending: PendingFile;
    try {
      const document = readApiDocument(file, files);
      return { source: sourceOf(file, realpaths, texts), document };
    } catch (error) {
      if (!(error instanceof PendingFile)) throw error;
      pending = error;
    }
    const got = yield pending;
    if (pending.kind === "realpath") realpaths.set(pending.path, got);
    else texts.set(pending.path, got ?? "");
  }
  throw new Error(`the document refers to more than ${MAX_REFERENCED_FILES - 1} other files`);
}

function firstFolder(realpaths: ReadonlyMap<string, string | null>, file: string): string {
  const root = realpaths.get(file) ?? file;
  return root.slice(0, root.lastIndexOf("/") + 1);
}

function sourceOf(
  file: string,
  realpaths: ReadonlyMap<string, string | null>,
  texts: ReadonlyMap<string, string>,
): DocumentSource {
  const folder = firstFolder(realpaths, file);
  const hash = createHash("sha256");
  if (texts.size === 1) {
    // One file: what `sha256sum` says of it, for an operator to compare.
    for (const text of texts.values()) hash.update(text);
  } else {
    for (const [path, text] of texts) {
      // The name is part of the hash: two files swapping their texts is another version.
      hash.update(relative(folder, path)).update("\0").update(text).update("\0");
    }
  }
  return { file, realpaths: [...realpaths], texts: [...texts], sha256: hash.digest("hex") };
}

/** The snapshot as the files the bundle reads: nothing is read from the file system again. */
export function filesOf(source: DocumentSource): DocumentFiles {
  const realpaths = new Map(source.realpaths);
  const texts = new Map(source.texts);
  return {
    realpath(path) {
      const found = realpaths.get(path);
      if (found === undefined || found === null) throw new Error(`no file ${path}`);
      return found;
    },
    read(path, name) {
      const text = texts.get(path);
      if (text === undefined) throw new Error(`${name} is not in the snapshot`);
      return parseDocumentFile(text, name);
    },
  };
}

/** Every path the snapshot followed or read: what a watch on the document watches the folders of. */
export function pathsOf(source: DocumentSource): string[] {
  const paths = new Set<string>([source.file]);
  for (const [path, target] of source.realpaths) {
    paths.add(path);
    if (target !== null) paths.add(target);
  }
  return [...paths];
}

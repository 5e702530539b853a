// From a file name to the OpenAPI document as one value: the file read as a trusted file is
// (src/trusted-file.ts: a regular file, with a size bound), parsed
// as JSON or YAML by what it holds, and the files its $refs name folded into it (bundle-refs.ts).
// Every failure is one line naming the file and, for a syntax error, the line and column.

import { realpathSync } from "node:fs";
import { parseDocument } from "yaml";
import { duplicateKey } from "../json/duplicate-keys.ts";
import { parseJsonText } from "../json/syntax-error.ts";
import { readTrustedFileSync } from "../trusted-file.ts";
import { bundleExternalRefs, type ReadFile, type RealPath } from "./bundle-refs.ts";
import { checkDocumentCost, checkExpandedSize } from "./document-cost.ts";

/** Larger than any hand-written description; refused before a byte is parsed. */
export const MAX_DOCUMENT_BYTES = 5 * 1024 * 1024;
/**
 * How many times a YAML file may use an alias: a real document needs a few, a "billion laughs"
 * needs them to multiply. The yaml package stops expanding once the aliases cost more than this.
 */
const MAX_ALIAS_COUNT = 100;
/** A YAML parser's message is cut here: it describes the problem, the line and column say where. */
const MAX_REASON_LENGTH = 200;

/** How the files of a document are reached: the file system, or a snapshot of it (document-source.ts). */
export interface DocumentFiles {
  readonly read: ReadFile;
  readonly realpath: RealPath;
}

const FILE_SYSTEM: DocumentFiles = { read: readDocumentFile, realpath: realpathSync };

/** The document of `file`, with every $ref to another file inside its folder resolved. */
export function readApiDocument(file: string, files: DocumentFiles = FILE_SYSTEM): unknown {
  const document = bundleExternalRefs(file, files.read, files.realpath);
  if (document === null || typeof document !== "object" || Array.isArray(document)) {
    // "not json" is a YAML string: say what the file holds rather than that it has no "openapi".
    const holds = document === null ? "null" : Array.isArray(document) ? "a list" : `a ${typeof document}`;
    throw new Error(`the file holds ${holds}, not an OpenAPI document (a YAML or JSON object)`);
  }
  checkDocumentCost(document as Record<string, unknown>);
  return document;
}

/**
 * One file's value. `name` is how a message calls it ("the file" for the document itself, its
 * relative path for a file a $ref names).
 */
function readDocumentFile(file: string, name: string): unknown {
  return parseDocumentFile(readTrustedFileSync(file, { maxBytes: MAX_DOCUMENT_BYTES, name }).text, name);
}

/** One file's text as a value: JSON or YAML, within the bounds every document file is held to. */
export function parseDocumentFile(text: string, name: string): unknown {
  const value = parseDocumentText(text, name);
  // Before the bundle walks it: the walk copies what an alias names once per alias.
  checkExpandedSize(value, name);
  return value;
}

/** JSON when the text starts as a JSON object does, YAML otherwise (YAML 1.2 also reads JSON, but says less about its errors). */
function parseDocumentText(text: string, name: string): unknown {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  return body.trimStart().startsWith("{") ? parseJson(body, name) : parseYaml(body, name);
}

function parseJson(text: string, name: string): unknown {
  let value: unknown;
  try {
    value = parseJsonText(text);
  } catch (error) {
    // The message names the member the error is in ("/info is not valid JSON"), so the file comes first.
    const where = (error as Error).message;
    throw new Error(name === "the file" ? where : `${name}: ${where}`);
  }
  // JSON.parse keeps the last of two equal names, a reader of the YAML form would refuse them: one rule for both.
  const duplicate = duplicateKey(text);
  if (duplicate !== undefined) throw new Error(`${name} gives ${duplicate} more than once`);
  return value;
}

function parseYaml(text: string, name: string): unknown {
  // The core schema (YAML 1.2): "2026-01-01" stays a string and "no" stays "no", as in JSON.
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  const error = document.errors[0];
  if (error !== undefined) {
    // prettyErrors appends the place and then an excerpt of the text; the excerpt is not for a log line.
    const reason = (error.message.split("\n")[0] ?? "")
      .replace(/ at line \d+, column \d+:?$/, "")
      .slice(0, MAX_REASON_LENGTH);
    const place = error.linePos?.[0];
    const at = place ? ` (line ${place.line}, column ${place.col})` : "";
    throw new Error(`${name} is not valid YAML: ${reason}${at}`);
  }
  try {
    return document.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    const reason = (error as Error).message;
    throw new Error(
      /alias count/i.test(reason)
        ? `${name} is refused: its YAML aliases expand beyond ${MAX_ALIAS_COUNT} copies (a "billion laughs" document)`
        : `${name} is not valid YAML: ${reason.slice(0, MAX_REASON_LENGTH)}`,
    );
  }
}

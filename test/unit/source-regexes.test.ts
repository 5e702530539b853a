// Every regex the gateway's code holds runs on V8's backtracking engine, and many run on text a
// client or a backend sent: one with nested or adjacent unbounded runs can take polynomial or
// exponential time on a crafted input while the event loop serves every client. recheck judges
// each one. They are found where they are written, by TypeScript's own parser (TypeScript 7's
// API, typescript/unstable/sync) over every .ts file under src/ and policies/: a regex literal,
// or RegExp(...) / new RegExp(...) of a string literal. A regex added anywhere later is judged
// without being listed anywhere; a RegExp built from something else cannot be judged, and must
// be named below with the reason it is harmless.
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { after, before, test } from "node:test";
import { checkSync } from "recheck";
import type { Expression, Node } from "typescript/unstable/ast";
import {
  isCallExpression,
  isIdentifier,
  isNewExpression,
  isNoSubstitutionTemplateLiteral,
  isRegularExpressionLiteral,
  isStringLiteral,
} from "typescript/unstable/ast/is";
import { API, type Program } from "typescript/unstable/sync";
import { PROJECT_ROOT } from "../../src/project-files.ts";

/** RegExps built from a value, not a literal: none of them runs on anyone's text. */
const BUILT_FROM_VALUES: Readonly<Record<string, string>> = {
  "src/linear-regexp.ts": "compiled only, so that V8 judges a document pattern's syntax; never run",
};

interface FoundRegex {
  /** file:line, from the project's root. */
  readonly where: string;
  readonly source: string;
  readonly flags: string;
}

interface Found {
  readonly regexes: readonly FoundRegex[];
  /** file:line of each RegExp built from something that is not a string literal. */
  readonly builtFromValues: readonly string[];
}

function literalText(node: Expression | undefined): string | undefined {
  if (node === undefined) return undefined;
  return isStringLiteral(node) || isNoSubstitutionTemplateLiteral(node) ? node.text : undefined;
}

/** Every .ts file under the folders, by the file system: none escapes the scan by being outside the program. */
function typeScriptFiles(folders: readonly string[]): string[] {
  return folders.flatMap((folder) =>
    readdirSync(join(PROJECT_ROOT, folder), { recursive: true, encoding: "utf8" })
      .filter((name) => name.endsWith(".ts"))
      .map((name) => join(PROJECT_ROOT, folder, name)),
  );
}

function findRegexes(program: Program, folders: readonly string[]): Found {
  const regexes: FoundRegex[] = [];
  const builtFromValues: string[] = [];
  for (const file of typeScriptFiles(folders)) {
    const sourceFile = program.getSourceFile(file);
    assert.ok(sourceFile, `${file} is not in tsconfig.json's program: its regexes would go unjudged`);
    const where = (node: Node) =>
      `${relative(PROJECT_ROOT, file)}:${sourceFile.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const visit = (node: Node): void => {
      if (isRegularExpressionLiteral(node)) {
        const end = node.text.lastIndexOf("/");
        regexes.push({
          where: where(node),
          source: node.text.slice(1, end),
          flags: node.text.slice(end + 1),
        });
      } else if (
        (isNewExpression(node) || isCallExpression(node)) &&
        isIdentifier(node.expression) &&
        node.expression.text === "RegExp"
      ) {
        const [pattern, flags] = node.arguments ?? [];
        const source = literalText(pattern);
        if (source === undefined) builtFromValues.push(where(node));
        else regexes.push({ where: where(node), source, flags: literalText(flags) ?? "" });
      }
      node.forEachChild(visit);
    };
    sourceFile.forEachChild(visit);
  }
  return { regexes, builtFromValues };
}

function fileOf(where: string): string {
  return where.slice(0, where.lastIndexOf(":"));
}

function verdictOf({ source, flags }: FoundRegex): { readonly safe: boolean; readonly verdict: string } {
  const diagnostics = checkSync(source, flags);
  if (diagnostics.status === "vulnerable") {
    return { safe: false, verdict: `${diagnostics.complexity.summary}, e.g. ${diagnostics.attack.pattern}` };
  }
  if (diagnostics.status === "unknown")
    return { safe: false, verdict: `unknown (${diagnostics.error.kind})` };
  return { safe: true, verdict: diagnostics.complexity.summary };
}

let api: API;
let program: Program;

before(() => {
  api = new API({ cwd: PROJECT_ROOT });
  const snapshot = api.updateSnapshot({ openProjects: [join(PROJECT_ROOT, "tsconfig.json")] });
  const [project] = snapshot.getProjects();
  assert.ok(project, "tsconfig.json opens as a project");
  program = project.program;
});

after(() => api?.close());

test("recheck judges every regex in src/ and policies/ safe from catastrophic backtracking", () => {
  const { regexes, builtFromValues } = findRegexes(program, ["src", "policies"]);
  const judged = regexes.map((regex) => ({ regex, ...verdictOf(regex) }));
  const unsafe = judged.filter(({ safe }) => !safe);
  assert.deepEqual(
    unsafe.map(({ regex, verdict }) => `${regex.where} /${regex.source}/${regex.flags}: ${verdict}`),
    [],
    "write it without nested or adjacent unbounded runs, or as a scan over character codes",
  );
  // The scan itself: the gateway has dozens (63 when it was written); a handful would mean it missed them.
  assert.ok(regexes.length >= 50, `only ${regexes.length} regexes found`);
  const unexplained = builtFromValues.filter((where) => !Object.hasOwn(BUILT_FROM_VALUES, fileOf(where)));
  assert.deepEqual(unexplained, [], "a RegExp built from a value cannot be judged: build it from a literal");
  console.log(judged.map(({ regex, verdict }) => `${regex.where} ${verdict}`).join("\n"));
});

test("the scan finds a literal and a RegExp of a string, and recheck refuses the ones that backtrack", () => {
  // test/fixtures/unsafe-regexes/: what the gateway must never hold, written both ways.
  const { regexes, builtFromValues } = findRegexes(program, ["test/fixtures/unsafe-regexes"]);
  assert.deepEqual(
    regexes.map((regex) => [regex.source, regex.flags, verdictOf(regex).safe]),
    [
      ["(a+)+$", "", false],
      ["([?&][^=&]*(?:key|token|auth|secret|password|signature)[^=&]*=)[^&]*", "gi", false],
      ["^[a-z]+$", "", true],
    ],
  );
  assert.deepEqual(builtFromValues.map(fileOf), ["test/fixtures/unsafe-regexes/written-both-ways.ts"]);
});

// The docs are many pages that link to each other and into the code: a page renamed or a heading
// reworded must not leave a reader on a dead link. Every relative link and #anchor in README.md,
// CONTRIBUTING.md, CHANGELOG.md and docs/ is followed here, with the anchors GitHub makes of headings.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";
import { PROJECT_ROOT } from "./support/program.ts";

const PAGES = [
  "README.md",
  "CONTRIBUTING.md",
  "CHANGELOG.md",
  ...readdirSync(resolve(PROJECT_ROOT, "docs"), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".md"))
    .map((name) => join("docs", name)),
].sort();

/** The lines of a page outside fenced code blocks, where a `#` or a `[x](y)` is text, not markup. */
function prose(text: string): string[] {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of text.split("\n")) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined) {
      if (fence === undefined) fence = marker[0] as string;
      else if (marker[0] === fence) fence = undefined;
      lines.push("");
      continue;
    }
    lines.push(fence === undefined ? line : "");
  }
  return lines;
}

/** GitHub's anchor for a heading (github-slugger): lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[`*]/g, "")
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");
}

/** Every anchor a page offers: its headings' slugs, the second of a name suffixed -1, and so on. */
function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const line of prose(readFileSync(resolve(PROJECT_ROOT, page), "utf8"))) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  return found;
}

interface Link {
  readonly page: string;
  readonly line: number;
  readonly target: string;
}

/** The relative links of a page: inline `[text](target)` and reference definitions, code spans left out. */
function links(page: string): Link[] {
  const found: Link[] = [];
  for (const [index, raw] of prose(readFileSync(resolve(PROJECT_ROOT, page), "utf8")).entries()) {
    const line = raw.replace(/`[^`]*`/g, "``");
    const targets = [
      ...[...line.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]),
      ...[...line.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/g)].map((match) => match[1]),
    ];
    for (const target of targets) {
      if (target === undefined || target === "" || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      found.push({ page, line: index + 1, target });
    }
  }
  return found;
}

const ALL = PAGES.flatMap(links);

test("anchors are GitHub's: lower case, punctuation and code marks dropped, spaces as hyphens", () => {
  assert.equal(slug("What the gateway does with a request"), "what-the-gateway-does-with-a-request");
  assert.equal(slug("Options (`policies.auth`)"), "options-policiesauth");
  assert.equal(slug("The key file and the image's user"), "the-key-file-and-the-images-user");
  assert.equal(slug("Request validation and `limit`"), "request-validation-and-limit");
  assert.equal(
    slug('What the gateway does where the interface says "not shown"'),
    "what-the-gateway-does-where-the-interface-says-not-shown",
  );
});

test("the pages link to each other: the check reads links from every page", () => {
  assert.ok(PAGES.includes("README.md") && PAGES.includes(join("docs", "security.md")), PAGES.join(", "));
  assert.ok(ALL.length > 50, `only ${ALL.length} relative links found`);
});

test("every relative link in the README, CONTRIBUTING, CHANGELOG and docs/ points to a file that exists", () => {
  const dead = ALL.filter(({ page, target }) => {
    const path = decodeURIComponent(target.split("#", 1)[0] as string);
    return path !== "" && !existsSync(resolve(PROJECT_ROOT, dirname(page), path));
  }).map(({ page, line, target }) => `${page}:${line} ${target}`);
  assert.deepEqual(dead, []);
});

test("every #anchor in those pages names a heading of the page it points to", () => {
  const cache = new Map<string, Set<string>>();
  const dead = ALL.filter(({ page, target }) => {
    const hash = target.indexOf("#");
    if (hash === -1) return false;
    const path = decodeURIComponent(target.slice(0, hash));
    const file = path === "" ? resolve(PROJECT_ROOT, page) : resolve(PROJECT_ROOT, dirname(page), path);
    if (!existsSync(file) || statSync(file).isDirectory() || !file.endsWith(".md")) return true;
    const key = relative(PROJECT_ROOT, file);
    let offered = cache.get(key);
    if (offered === undefined) {
      offered = anchors(key);
      cache.set(key, offered);
    }
    return !offered.has(decodeURIComponent(target.slice(hash + 1)));
  }).map(({ page, line, target }) => `${page}:${line} ${target}`);
  assert.deepEqual(dead, []);
});

test("every `npm run <script>` the pages tell a reader to type is a script of package.json", () => {
  const { scripts } = JSON.parse(readFileSync(resolve(PROJECT_ROOT, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  };
  const missing: string[] = [];
  let named = 0;
  for (const page of PAGES) {
    // Code blocks included: that is where the commands are.
    for (const [index, line] of readFileSync(resolve(PROJECT_ROOT, page), "utf8").split("\n").entries()) {
      for (const match of line.matchAll(/\bnpm run(?: -s| --silent)? ([a-z][\w:-]*)/g)) {
        named++;
        const script = match[1] as string;
        if (!(script in scripts)) missing.push(`${page}:${index + 1} npm run ${script}`);
      }
    }
  }
  assert.ok(named > 20, `only ${named} npm run commands found`);
  assert.deepEqual(missing, []);
});

/**
 * `npm run` (not `-s`) and, before the next command (`|`, `;`, `&`), its stdout sent to a file:
 * ` > f`, ` >> f`, ` 1> f`, ` &> f`, but not `> /dev/null`, `2> f` or `>&2`. A `>` straight after a
 * word is left alone: in prose it closes a placeholder (`<ref>`), and no page writes `cmd>f`.
 */
const REDIRECTED_NPM_RUN = /\bnpm run (?!-s\b|--silent\b)[^|;&]*?\s(?:&|1)?>>?\s*(?!\/dev\/null\b)[^\s>&]/;
/** npm's own -s or --silent after the script's name silences the banner too. */
const SILENCED = /\bnpm run [^|;&]*\s(?:-s|--silent)(?:\s|$)/;

test("the redirect check tells a banner-starting redirect from a harmless one", () => {
  for (const bad of [
    "npm run plan > plan.txt",
    "npm run plan -- --format json >> out.json",
    "npm run x 1> f",
    "npm run x &> f",
  ]) {
    assert.ok(REDIRECTED_NPM_RUN.test(bad) && !SILENCED.test(bad), bad);
  }
  for (const fine of [
    "npm run -s plan > plan.txt",
    "npm run plan --silent > plan.txt",
    "npm run plan > /dev/null",
    "npm run plan 2> errors.txt",
    "npm run a && npm run -s b > f",
    "npm run keys -- add acme",
  ]) {
    assert.ok(!REDIRECTED_NPM_RUN.test(fine) || SILENCED.test(fine), fine);
  }
});

test("no page redirects `npm run`'s stdout to a file without -s: npm's banner would start the file", () => {
  const redirected: string[] = [];
  for (const page of PAGES) {
    // A command continued over lines with a trailing backslash is one command.
    const commands = readFileSync(resolve(PROJECT_ROOT, page), "utf8").replace(/\\\n/g, " ").split("\n");
    for (const [index, command] of commands.entries()) {
      if (REDIRECTED_NPM_RUN.test(command) && !SILENCED.test(command)) {
        redirected.push(`${page}: ${command.trim().slice(0, 100)} (logical line ${index + 1})`);
      }
    }
  }
  assert.deepEqual(redirected, []);
});

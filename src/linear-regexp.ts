// The regular expressions a schema holds (`pattern`, `patternProperties`) are written by whoever
// wrote the document, and ajv runs them on client text (query, path, body members) and on backend
// text (the response contract). V8's engine backtracks: `^(a+)+$` held the event loop for 30 s on
// a 30-character query value. So no schema pattern runs on V8's engine: each one is read here as
// the ECMA-262 expression it is (the `u` flag ajv compiles with) and written out in RE2 syntax with
// ECMA-262's meaning, for re2js, a pure-JavaScript RE2 whose matching is linear in the text by
// construction. What RE2 cannot express (lookaround, backreferences) is refused with the reason,
// never dropped: the document's author hears of it at start-up and in `npm run plan`.
//
// Where the two dialects read the same text differently, the meaning written out is ECMA-262's:
// `.` excludes \r, \u2028 and \u2029 as well as \n; `\s` is ECMA-262's 25 white-space and line
// terminator characters (RE2's is 5, without \v); a class is written with its characters spelled
// as \x{...}, so that RE2's own syntax inside brackets (`[[:alpha:]]`) and outside (`\Q`, `\z`)
// is never read into a document's pattern. test/unit/linear-regexp.test.ts holds both engines to
// the same answers on a corpus.
import type { RegExpEngine, RegExpLike } from "ajv/dist/types/index.js";
import { RE2JS } from "re2js";

/** A pattern the linear engine cannot run as ECMA-262 means it; `reason` says what to change. */
export class UnsupportedPatternError extends Error {
  override name = "UnsupportedPatternError";
  readonly pattern: string;
  readonly reason: string;
  constructor(pattern: string, reason: string) {
    super(`pattern ${JSON.stringify(pattern)} is refused: ${reason}`);
    this.pattern = pattern;
    this.reason = reason;
  }
}

type Range = readonly [number, number];

const MAX_CODE_POINT = 0x10ffff;
// RE2 refuses a counted repetition above this; ECMA-262 has no bound.
const MAX_REPEAT = 1000;
const DIGITS: readonly Range[] = [[0x30, 0x39]];
const WORD: readonly Range[] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
// ECMA-262's WhiteSpace and LineTerminator: \t \n \v \f \r, space, no-break space, the Zs
// characters and the byte order mark.
const WHITE_SPACE: readonly Range[] = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
const LINE_TERMINATORS: readonly Range[] = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];
const ANY: readonly Range[] = [[0, MAX_CODE_POINT]];
const ASCII: readonly Range[] = [[0, 0x7f]];

// ECMA-262's long General_Category names, for RE2, which knows the short ones only.
const GENERAL_CATEGORIES: Readonly<Record<string, string>> = {
  Other: "C",
  Control: "Cc",
  Format: "Cf",
  Private_Use: "Co",
  Surrogate: "Cs",
  Letter: "L",
  Lowercase_Letter: "Ll",
  Modifier_Letter: "Lm",
  Other_Letter: "Lo",
  Titlecase_Letter: "Lt",
  Uppercase_Letter: "Lu",
  Mark: "M",
  Spacing_Mark: "Mc",
  Enclosing_Mark: "Me",
  Nonspacing_Mark: "Mn",
  Number: "N",
  Decimal_Number: "Nd",
  Letter_Number: "Nl",
  Other_Number: "No",
  Punctuation: "P",
  Connector_Punctuation: "Pc",
  Dash_Punctuation: "Pd",
  Close_Punctuation: "Pe",
  Final_Punctuation: "Pf",
  Initial_Punctuation: "Pi",
  Other_Punctuation: "Po",
  Open_Punctuation: "Ps",
  Symbol: "S",
  Currency_Symbol: "Sc",
  Modifier_Symbol: "Sk",
  Math_Symbol: "Sm",
  Other_Symbol: "So",
  Separator: "Z",
  Line_Separator: "Zl",
  Paragraph_Separator: "Zp",
  Space_Separator: "Zs",
};
const SHORT_CATEGORIES = new Set(Object.values(GENERAL_CATEGORIES));

function complement(ranges: readonly Range[]): Range[] {
  const out: Range[] = [];
  let next = 0;
  for (const [low, high] of ranges) {
    if (low > next) out.push([next, low - 1]);
    next = high + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}

function codePoint(value: number): string {
  // Letters and digits as they are (RE2 reads them as themselves); anything else spelled out, so
  // that no character is read as RE2 syntax.
  return (value >= 0x30 && value <= 0x39) ||
    (value >= 0x41 && value <= 0x5a) ||
    (value >= 0x61 && value <= 0x7a)
    ? String.fromCharCode(value)
    : `\\x{${value.toString(16)}}`;
}

function rangesText(ranges: readonly Range[]): string {
  return ranges
    .map(([low, high]) => (low === high ? codePoint(low) : `${codePoint(low)}-${codePoint(high)}`))
    .join("");
}

/** A class of the items, negated or not; an empty one matches nothing, as `[]` does in ECMA-262. */
function classText(items: readonly string[], negated: boolean): string {
  const body = items.join("");
  if (body === "") return negated ? `[${rangesText(ANY)}]` : `[^${rangesText(ANY)}]`;
  return `[${negated ? "^" : ""}${body}]`;
}

/**
 * The RE2 syntax that means what `source` means to ECMA-262 with `flags` (`u`, and `i` for the
 * gateway's own format checks), or an UnsupportedPatternError.
 */
export function toRe2Syntax(source: string, flags = "u"): string {
  const refuse = (reason: string): never => {
    throw new UnsupportedPatternError(source, reason);
  };
  for (const flag of flags) if (flag !== "u" && flag !== "i") refuse(`the ${flag} flag is not supported`);
  const ignoreCase = flags.includes("i");
  try {
    // Syntax is ECMA-262's to judge: what follows reads a pattern V8 accepted with the u flag.
    // Only compiled here, never run.
    new RegExp(source, "u");
  } catch (error) {
    refuse(`it is not an ECMA-262 regular expression with the u flag (${(error as Error).message})`);
  }
  let at = 0;
  const startsWith = (text: string): boolean => source.startsWith(text, at);
  const eat = (text: string): boolean => {
    if (!startsWith(text)) return false;
    at += text.length;
    return true;
  };
  const nextCodePoint = (): number => {
    const value = source.codePointAt(at) as number;
    at += value > 0xffff ? 2 : 1;
    return value;
  };
  const hexDigits = (count: number): number => {
    const value = Number.parseInt(source.slice(at, at + count), 16);
    at += count;
    return value;
  };
  const until = (end: string): string => {
    const stop = source.indexOf(end, at);
    const text = source.slice(at, stop);
    at = stop + end.length;
    return text;
  };

  /** \d \D \s \S \w \W \p{..} \P{..} as class items (at the letter after the backslash), or undefined. */
  const classEscape = (): string[] | undefined => {
    const letter = source[at];
    const sets: Record<string, readonly Range[]> = { d: DIGITS, s: WHITE_SPACE, w: WORD };
    const set = sets[letter?.toLowerCase() ?? ""];
    if (set !== undefined) {
      if (letter === "w" || letter === "W") {
        // With i and u, ECMA-262's \w also holds U+017F and U+212A; the gateway never asks for it.
        if (ignoreCase) refuse("\\w with the i flag is not supported");
      }
      at++;
      return [rangesText(letter === letter?.toLowerCase() ? set : complement(set))];
    }
    if (letter === "p" || letter === "P") {
      at += 2;
      const property = until("}");
      const negated = letter === "P";
      if (ignoreCase) refuse(`\\${letter}{${property}} with the i flag is not supported`);
      if (property === "Any") return [rangesText(negated ? complement(ANY) : ANY)];
      if (property === "ASCII") return [rangesText(negated ? complement(ASCII) : ASCII)];
      const [name, value] = property.includes("=") ? property.split("=") : ["General_Category", property];
      let re2Name: string | undefined;
      if (name === "General_Category" || name === "gc") {
        re2Name = SHORT_CATEGORIES.has(value as string) ? value : GENERAL_CATEGORIES[value as string];
      } else if (name === "Script" || name === "sc") {
        // RE2 knows scripts by their long names (Latin, Greek, Han); a short alias fails to compile.
        re2Name = value;
      }
      if (re2Name === undefined) refuse(`the Unicode property \\${letter}{${property}} is not supported`);
      return [`\\${letter}{${re2Name}}`];
    }
    return undefined;
  };

  /** A character escape's code point, at the letter after the backslash. */
  const characterEscape = (inClass: boolean): number => {
    const letter = source[at] as string;
    const controls: Record<string, number> = { f: 0x0c, n: 0x0a, r: 0x0d, t: 0x09, v: 0x0b, 0: 0 };
    if (inClass && letter === "b") {
      at++;
      return 0x08;
    }
    if (letter in controls) {
      at++;
      return controls[letter] as number;
    }
    if (letter === "c") {
      at++;
      return (source.charCodeAt(at++) as number) % 32;
    }
    if (letter === "x") {
      at++;
      return hexDigits(2);
    }
    if (letter === "u") {
      at++;
      if (eat("{")) return Number.parseInt(until("}"), 16);
      const unit = hexDigits(4);
      // With u, an escaped surrogate pair is one code point, as it is in the text it matches.
      if (
        unit >= 0xd800 &&
        unit <= 0xdbff &&
        /^\\u[dD][c-fC-F][0-9a-fA-F]{2}/.test(source.slice(at, at + 6))
      ) {
        at += 2;
        const low = hexDigits(4);
        return (unit - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000;
      }
      return unit;
    }
    // An identity escape: a syntax character, /, or - in a class.
    return nextCodePoint();
  };

  const characterClass = (): string => {
    at++; // [
    const negated = eat("^");
    const items: string[] = [];
    const classAtom = (): number | string[] => {
      if (!eat("\\")) return nextCodePoint();
      return classEscape() ?? characterEscape(true);
    };
    while (source[at] !== "]") {
      const first = classAtom();
      if (typeof first === "number" && source[at] === "-" && source[at + 1] !== "]") {
        at++;
        // With u, a range between a character and a class escape is a syntax error V8 reported.
        const last = classAtom() as number;
        items.push(`${codePoint(first)}-${codePoint(last)}`);
      } else {
        items.push(...(typeof first === "number" ? [codePoint(first)] : first));
      }
    }
    at++; // ]
    return classText(items, negated);
  };

  const quantifier = (): string => {
    let text = "";
    const symbol = source[at];
    if (symbol === "*" || symbol === "+" || symbol === "?") {
      at++;
      text = symbol;
    } else if (symbol === "{") {
      const counts = until("}");
      for (const count of counts.slice(1).split(",")) {
        if (count !== "" && Number(count) > MAX_REPEAT) {
          refuse(`a repetition count above ${MAX_REPEAT} (${counts}}) is not supported`);
        }
      }
      text = `${counts}}`;
    } else {
      return "";
    }
    if (eat("?")) text += "?";
    return text;
  };

  const atom = (): string => {
    const symbol = source[at];
    if (symbol === ".") {
      at++;
      return classText([rangesText(LINE_TERMINATORS)], true);
    }
    if (symbol === "[") return characterClass();
    if (symbol === "(") {
      at++;
      if (eat("?<"))
        until(">"); // a named group: its name matters to no test
      else if (startsWith("?") && !eat("?:")) refuse("a modifier group (?flags:...) is not supported");
      const inner = disjunction();
      at++; // )
      return `(?:${inner})`;
    }
    if (symbol === "\\") {
      at++;
      const letter = source[at] as string;
      if (letter >= "1" && letter <= "9") refuse(`a backreference (\\${letter}) has no linear-time match`);
      if (letter === "k") refuse("a named backreference (\\k<name>) has no linear-time match");
      const items = classEscape();
      if (items !== undefined) return classText(items, false);
      return codePoint(characterEscape(false));
    }
    return codePoint(nextCodePoint());
  };

  const term = (): string => {
    for (const [opening, what] of [
      ["(?=", "a lookahead (?=...)"],
      ["(?!", "a negative lookahead (?!...)"],
      ["(?<=", "a lookbehind (?<=...)"],
      ["(?<!", "a negative lookbehind (?<!...)"],
    ] as const) {
      if (startsWith(opening)) refuse(`${what} has no linear-time match (RE2 has no lookaround)`);
    }
    if (eat("^")) return "^";
    // Without the m flag, ECMA-262's $ is the end of the text, not before a last \n: RE2's \z.
    if (eat("$")) return "\\z";
    if (startsWith("\\b") || startsWith("\\B")) {
      // ASCII word characters on both sides, as ECMA-262's without the i flag.
      if (ignoreCase) refuse("\\b with the i flag is not supported");
      at += 2;
      return source[at - 1] === "b" ? "\\b" : "\\B";
    }
    const text = atom();
    return text + quantifier();
  };

  const disjunction = (): string => {
    const alternatives: string[] = [];
    do {
      let alternative = "";
      while (at < source.length && source[at] !== "|" && source[at] !== ")") alternative += term();
      alternatives.push(alternative);
    } while (eat("|"));
    return alternatives.join("|");
  };

  const body = disjunction();
  return ignoreCase ? `(?i:${body})` : body;
}

/** A compiled pattern as ajv uses one: `test` searches the text, as RegExp.prototype.test does. */
export interface LinearRegExp extends RegExpLike {
  readonly source: string;
  readonly flags: string;
}

/** `source` as ECMA-262 means it with `flags`, matched in time linear in the text. */
export function linearRegExp(source: string, flags = "u"): LinearRegExp {
  const syntax = toRe2Syntax(source, flags);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(syntax);
  } catch (error) {
    throw new UnsupportedPatternError(
      source,
      `the linear engine (RE2) cannot run it: ${(error as Error).message}`,
    );
  }
  return Object.freeze({
    source,
    flags,
    test: (text: string) => compiled.test(text),
    // ajv keys its compiled patterns by this text.
    toString: () => `/${source}/${flags}`,
  });
}

/**
 * ajv's `code.regExp`: every `pattern` and `patternProperties` of the schemas an instance
 * compiles. One per instance, with its own cache, since ajv asks again for each use of a pattern.
 */
export function linearRegExpEngine(): RegExpEngine {
  const compiled = new Map<string, LinearRegExp>();
  const engine = (source: string, flags: string): LinearRegExp => {
    // ajv passes "u" (its unicodeRegExp default): the meaning JSON Schema gives a pattern.
    const key = `${flags}/${source}`;
    let pattern = compiled.get(key);
    if (pattern === undefined) {
      pattern = linearRegExp(source, flags === "" ? "u" : flags);
      compiled.set(key, pattern);
    }
    return pattern;
  };
  // Only read when ajv writes standalone code, which the gateway never does.
  return Object.assign(engine, { code: 'require("re2js")' });
}

// Saying why a text is not JSON without repeating the text: V8's own message quotes a slice of
// it, which would print a secret a file holds or echo a client's bytes back.
import { clientPointerSegment } from "./pointer.ts";

/** A JSON number at lastIndex. */
const JSON_NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
/** A JSON string escape at lastIndex. */
const JSON_ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y;

/**
 * JSON.parse for a file's text, whose error is one line saying where (V8's message quotes the
 * text, newlines and all, which would also print a secret the file holds).
 */
export function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(describeSyntaxError(text, "the file"));
  }
}

/**
 * Why a text is not JSON, naming where: "/categoryId is not valid JSON (line 1, column 29)".
 * Only for texts JSON.parse refused, so its cost never touches a valid request. The message
 * quotes no value from the text, only member names on the way to the error, shortened.
 */
export function describeSyntaxError(text: string, subject: string): string {
  const { offset, pointer } = locateSyntaxError(text);
  if (offset >= text.length) return `${pointer || subject} is not valid JSON (it ends too early)`;
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return `${pointer || subject} is not valid JSON (line ${line}, column ${offset - lineStart + 1})`;
}

const STOP = Symbol("stop");

/** The offset of the first syntax error and the JSON pointer of the member it is in. */
function locateSyntaxError(text: string): { offset: number; pointer: string } {
  const path: string[] = [];
  let i = 0;
  const fail = (): never => {
    throw STOP;
  };
  const space = () => {
    for (let c = text.charCodeAt(i); c === 32 || c === 9 || c === 10 || c === 13; c = text.charCodeAt(++i));
  };
  const string = (): string => {
    if (text[i] !== '"') fail();
    const start = i++;
    for (;;) {
      const c = text.charCodeAt(i);
      if (Number.isNaN(c) || c < 0x20) fail();
      if (c === 34) return JSON.parse(text.slice(start, ++i)) as string;
      if (c === 92) {
        JSON_ESCAPE.lastIndex = i;
        if (!JSON_ESCAPE.test(text)) fail();
        i = JSON_ESCAPE.lastIndex;
      } else i++;
    }
  };
  const literal = (word: string) => {
    if (!text.startsWith(word, i)) fail();
    i += word.length;
  };
  // An object or an array: `entry` reads one member or element and pushes its path segment.
  const container = (close: string, entry: (index: number) => void): void => {
    i++;
    space();
    if (text[i] === close) return void i++;
    for (let index = 0, more = true; more; index++) {
      entry(index);
      space();
      // The entry stays on the path until its separator: "07" fails after "0" parsed.
      if (text[i] !== "," && text[i] !== close) fail();
      more = text[i++] === ",";
      path.pop();
    }
  };
  const member = (): void => {
    space();
    path.push(string());
    space();
    if (text[i] !== ":") fail();
    i++;
    value();
  };
  const element = (index: number): void => {
    path.push(String(index));
    value();
  };
  const value = (): void => {
    space();
    const c = text[i];
    if (c === "{") return container("}", member);
    if (c === "[") return container("]", element);
    if (c === '"') return void string();
    if (c === "t") return literal("true");
    if (c === "f") return literal("false");
    if (c === "n") return literal("null");
    JSON_NUMBER.lastIndex = i;
    if (!JSON_NUMBER.test(text)) fail();
    i = JSON_NUMBER.lastIndex;
  };
  try {
    value();
    space();
    if (i < text.length) fail();
  } catch (error) {
    if (error !== STOP) throw error;
  }
  return { offset: i, pointer: path.map(clientPointerSegment).join("") };
}

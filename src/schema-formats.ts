// The formats the gateway's ajv knows: ajv-formats' full set, which a document enables by naming
// one (`format: url`), and which then runs on client and backend text, out of reach of ajv's
// `code.regExp`. Each one is in FORMAT_INVENTORY with the reason its work is linear in the text;
// test/unit/schema-formats.test.ts fails on a format ajv knows that the inventory does not, and
// test/slow/document-patterns.test.ts has recheck judge every regex the formats run and times
// each format on 100,000-character texts.
import type { Ajv, FormatDefinition } from "ajv";
import type { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { fullFormats } from "ajv-formats/dist/formats.js";
import { linearRegExp } from "./linear-regexp.ts";

/** Format -> why its cost is linear in the text it checks. */
export const FORMAT_INVENTORY: Readonly<Record<string, string>> = {
  date: "ajv-formats' regex, judged safe by recheck",
  time: "ajv-formats' regex, judged safe by recheck",
  "date-time": "a split and ajv-formats' date and time regexes, judged safe by recheck",
  "iso-time": "ajv-formats' regex, judged safe by recheck",
  "iso-date-time": "a split and ajv-formats' date and time regexes, judged safe by recheck",
  duration: "ajv-formats' regex, judged safe by recheck",
  uri: "ajv-formats' regexes, judged safe by recheck",
  "uri-reference": "ajv-formats' regex, judged safe by recheck",
  "uri-template": "ajv-formats' regex, judged safe by recheck",
  url: "ajv-formats' regex judged quadratic by recheck: replaced by the same expression on the linear engine",
  email: "ajv-formats' regex, judged safe by recheck",
  hostname: "ajv-formats' regex, judged safe by recheck",
  ipv4: "ajv-formats' regex, judged safe by recheck",
  ipv6: "ajv-formats' regex, judged safe by recheck",
  regex: "compiles the text with V8 (never runs it), after a regex judged safe by recheck",
  uuid: "ajv-formats' regex, judged safe by recheck",
  "json-pointer": "ajv-formats' regex, judged safe by recheck",
  "json-pointer-uri-fragment": "ajv-formats' regex, judged safe by recheck",
  "relative-json-pointer": "ajv-formats' regex, judged safe by recheck",
  byte: "ajv-formats' regex, judged safe by recheck",
  int32: "a number: no text",
  int64: "a number: no text",
  float: "a number: no text",
  double: "a number: no text",
  password: "accepts any string: no work",
  binary: "accepts any string: no work",
};

// ajv-formats' url regex keeps private addresses out with three lookaheads before the first three
// octets of a dotted quad (10/8, 127/8, 169.254/16, 192.168/16, 172.16/12). RE2 has no lookahead,
// so the same octets are written as the public ones only; the rest of the regex is ajv-formats'
// own. test/unit/schema-formats.test.ts checks every first and second octet against the original.
const PRIVATE_FIRST_THREE_OCTETS = String.raw`(?!(?:10|127)(?:\.\d{1,3}){3})(?!(?:169\.254|192\.168)(?:\.\d{1,3}){2})(?!172\.(?:1[6-9]|2\d|3[0-1])(?:\.\d{1,3}){2})(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}`;
const OCTET = String.raw`(?:\d{1,2}|1\d\d|2[0-4]\d|25[0-5])`;
// 1 to 223, but 10, 127, 169, 172 and 192.
const OTHER_FIRST_OCTET = String.raw`(?:[1-9]|1[1-9]|[2-9]\d|1[0-13-58]\d|12[0-689]|16[0-8]|17[013-9]|19[013-9]|2[01]\d|22[0-3])`;
const PUBLIC_FIRST_THREE_OCTETS = [
  "(?:",
  String.raw`${OTHER_FIRST_OCTET}\.${OCTET}`,
  String.raw`|169\.(?:\d{1,2}|1\d\d|2[0-4]\d|25[0-35])`,
  String.raw`|192\.(?:\d{1,2}|1[0-57-9]\d|16[0-79]|2[0-4]\d|25[0-5])`,
  String.raw`|172\.(?:\d|0\d|1[0-5]|3[2-9]|[4-9]\d|1\d\d|2[0-4]\d|25[0-5])`,
  String.raw`)\.${OCTET}`,
].join("");

/** ajv-formats' url regex with its lookaheads written out as alternatives: the same strings. */
export function linearUrlSource(): string {
  const url = fullFormats.url as RegExp;
  if (!url.source.includes(PRIVATE_FIRST_THREE_OCTETS)) {
    // A new ajv-formats wrote it otherwise: stop rather than check urls against a guess.
    throw new Error("ajv-formats' url format changed: src/schema-formats.ts must be brought up to date");
  }
  return url.source.replace(PRIVATE_FIRST_THREE_OCTETS, PUBLIC_FIRST_THREE_OCTETS);
}

let linearUrl: ((text: string) => boolean) | undefined;

/**
 * ajv-formats' url, matched in linear time. Compiled once per process, on first use: with the i
 * flag, RE2 folds the case of every character of its large classes, which costs 40-80 ms.
 */
export function linearUrlFormat(): (text: string) => boolean {
  if (linearUrl === undefined) {
    const linear = linearRegExp(linearUrlSource(), (fullFormats.url as RegExp).flags);
    linearUrl = (text) => linear.test(text);
  }
  return linearUrl;
}

/** ajv-formats' full set, url on the linear engine. */
export function addGatewayFormats(ajv: Ajv | Ajv2020): void {
  addFormats.default(ajv);
  // ajv reads `validate` when it compiles a schema that names the format, so a gateway whose
  // document has no url format never compiles it, and one whose document has compiles it at start-up.
  const url = {
    type: "string",
    get validate() {
      return linearUrlFormat();
    },
  } as FormatDefinition<string>;
  ajv.addFormat("url", url);
}

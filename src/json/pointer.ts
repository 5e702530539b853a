// JSON pointers (RFC 6901) that name where in a body or a document something is.
import { quotedClientText } from "../redaction.ts";

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;

/** A member name as one JSON pointer token (RFC 6901): "~" becomes "~0", then "/" becomes "~1". */
export function escapePointerToken(name: string): string {
  return name.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** The member name a JSON pointer token stands for: "~1" back to "/" first, then "~0" to "~". */
export function unescapePointerToken(token: string): string {
  return token.replaceAll("~1", "/").replaceAll("~0", "~");
}

/** One "/token" of a pointer that goes into a message about the client's text. */
export function clientPointerSegment(name: string): string {
  const escaped = escapePointerToken(name);
  // A member name is the client's text: printable in a message, and no key it may hold.
  return `/${quotedClientText(escaped.replace(CONTROL_CHARACTERS, "?"))}`;
}

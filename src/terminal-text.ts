// Text for an operator's terminal that holds others' words: names from documents and configs,
// consumers from log lines (the plan, the change review). No control character of theirs reaches
// the terminal: an ESC could clear it or retitle it, a CR or a bidi override could make one line
// read as another.

/**
 * What a terminal acts on rather than prints: C0 and C1 controls (ESC and CSI start escape
 * sequences), DEL, and the bidirectional overrides and isolates that reorder what is shown.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const TERMINAL_CONTROLS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
/** The same, less what JSON.stringify already escapes (C0): for JSON written to a terminal. */
const TERMINAL_CONTROLS_BEYOND_C0 = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** text without any character a terminal acts on (line breaks included: a line is one line). */
export function withoutTerminalControls(text: string): string {
  return text.replace(TERMINAL_CONTROLS, "");
}

/**
 * JSON text with every character a terminal acts on \u-escaped: the same text to a JSON reader,
 * which gets the names exactly as written, inert to a terminal (they occur only inside strings).
 */
export function terminalSafeJson(json: string): string {
  return json.replace(TERMINAL_CONTROLS_BEYOND_C0, unicodeEscape);
}

function unicodeEscape(character: string): string {
  return `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

// The gateway's own log lines read back (the fleet-wide reports read every replica's logs): a
// collector may put a prefix before the JSON, and other lines, broken lines and other messages
// are skipped.

/** The line's JSON object when it is a line with this `msg`; undefined for anything else. */
export function logEntry(line: string, msg: string): Record<string, unknown> | undefined {
  const start = line.indexOf("{");
  // Most lines are other messages: skipped before parsing.
  if (start === -1 || !line.includes(msg)) return undefined;
  let entry: unknown;
  try {
    entry = JSON.parse(line.slice(start));
  } catch {
    return undefined;
  }
  const object = entry as Record<string, unknown> | null;
  return object !== null && typeof object === "object" && object.msg === msg ? object : undefined;
}

// Which of an operation's responses the document gives for a status an answer has, in OpenAPI's
// order of precedence: the status itself ("404"), else its class ("4XX"; "4xx" read alike), else
// "default". The response contract judges an answer by it, and the usage policy counts it under it.

/** The key of `responses` (as the document writes it) a status falls under; undefined when none. */
export function documentedResponseKey(
  responses: ReadonlyMap<string, unknown>,
  status: number,
): string | undefined {
  const exact = String(status);
  if (responses.has(exact)) return exact;
  const range = `${exact[0]}XX`;
  if (responses.has(range)) return range;
  const lowerRange = `${exact[0]}xx`;
  if (responses.has(lowerRange)) return lowerRange;
  return responses.has("default") ? "default" : undefined;
}

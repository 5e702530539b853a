// Media types as the document declares them (the keys of a `content` map) and as a request's
// Content-Type names one: compared by their essence (type/subtype, case-insensitive), so that
// `application/json; charset=utf-8` is application/json, and the most specific declared key wins
// as OpenAPI says (`application/json` before `application/*` before `*/*`).

/**
 * A Content-Type the gateway reads as JSON: application/json or a +json type, parameters allowed.
 * Tested on a backend's header as it came (no essence built for each answer).
 */
export const JSON_FAMILY_MEDIA_TYPE = /^application\/(?:[\w.+-]*\+)?json\s*(?:;|$)/i;

/** type/subtype in lower case, without parameters ("" when there is none). */
export function mediaTypeEssence(value: string): string {
  const semicolon = value.indexOf(";");
  return (semicolon === -1 ? value : value.slice(0, semicolon)).trim().toLowerCase();
}

/** application/json or a structured +json type (application/merge-patch+json, application/vnd.x+json). */
export function isJsonMediaType(value: string): boolean {
  // The one pattern for a JSON media type, on the essence alone.
  return JSON_FAMILY_MEDIA_TYPE.test(mediaTypeEssence(value));
}

/** A declared key with a wildcard (`application/*`, `*\/*`): it may receive JSON. */
export function isWildcardMediaType(value: string): boolean {
  return mediaTypeEssence(value).includes("*");
}

/**
 * How a request's Content-Type finds its declared key, the most specific first (undefined when
 * none does): built once per operation, so that a request costs the essence of its own header
 * and a comparison per key, not the essence of every key again.
 */
export function mediaTypeMatcher<T extends { readonly mediaType: string }>(
  declared: readonly T[],
): (contentType: string) => T | undefined {
  const keys = declared.map((entry) => ({ entry, essence: mediaTypeEssence(entry.mediaType) }));
  return (contentType) => {
    const essence = mediaTypeEssence(contentType);
    const slash = essence.indexOf("/");
    if (slash <= 0 || slash === essence.length - 1) return undefined;
    const range = `${essence.slice(0, slash)}/*`;
    let byRange: T | undefined;
    let any: T | undefined;
    for (const key of keys) {
      if (key.essence === essence) return key.entry;
      if (key.essence === range) byRange ??= key.entry;
      else if (key.essence === "*/*") any ??= key.entry;
    }
    return byRange ?? any;
  };
}

/** The key of a `content` map whose schema describes a JSON answer: application/json, else the first +json. */
export function jsonMediaTypeOf(keys: readonly string[]): string | undefined {
  return (
    keys.find((key) => mediaTypeEssence(key) === "application/json") ??
    keys.find((key) => isJsonMediaType(key))
  );
}

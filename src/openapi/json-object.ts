// The document as JSON values, and the one check its readers make of a member that must be an object.
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** The member as an object, undefined when absent; anything else stops start-up naming where it is. */
export function asObject(value: Json | undefined, where: string): JsonObject | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error(`${where} must be an object`);
  }
  return value;
}

/** An object that is not an array or null: a JSON object, whatever its members hold. */
export function isJsonObject<Member = unknown>(value: unknown): value is { [key: string]: Member } {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

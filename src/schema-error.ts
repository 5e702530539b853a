// An ajv error told as one line a person acts on: which field, and what it should be. Every
// schema the gateway checks (config, request bodies, answers, key file, document extensions)
// is told this way; a place says only how it names a field and, for text a client or a backend
// sent, how that text is kept harmless.
import type { ErrorObject } from "ajv";
import { quotedClientText } from "./redaction.ts";

export interface ErrorWording {
  /** The name of the value at an ajv instance path; "" is the whole value ("body", "the file"). */
  readonly field: (pointer: string) => string;
  /** What to say of a property the schema does not allow, in the object at `pointer`. */
  readonly unknownProperty?: (pointer: string, property: string) => string;
  /** How a property name from the checked value itself is shown: the hook for untrusted text. */
  readonly quote?: (text: string) => string;
}

type Branches = readonly Record<string, unknown>[];

/** The first error of ajv's list as one line, e.g. "/categoryId must be integer". */
export function describeSchemaError(errors: ErrorObject[] | null | undefined, wording: ErrorWording): string {
  // A field with alternatives (0 or from 100 ms; a count or "auto") fails each branch first: the
  // alternatives are what to tell, not the first branch's complaint. They can be told only when
  // the error carries its schema (ajv's `verbose`); otherwise the first complaint is the answer.
  const withAlternatives = errors?.find((error) => alternativesOf(error) !== undefined);
  const error = withAlternatives ?? errors?.[0];
  const { field } = wording;
  if (!error) return `${field("")} is not valid`;
  const where = field(error.instancePath);
  const branches = alternativesOf(error);
  if (branches !== undefined) return `${where} must be ${alternatives(branches)}`;
  const params = error.params as Record<string, unknown>;
  if (error.keyword === "additionalProperties") {
    const property = String(params.additionalProperty);
    const quote = wording.quote ?? ((text: string) => text);
    return (
      wording.unknownProperty?.(error.instancePath, property) ??
      `${where} must not have the property '${quote(property)}'`
    );
  }
  // A typed enum ({ type: "string", enum }) fails on the type first: the values are still the answer.
  const allowed = (error.parentSchema as { enum?: unknown } | undefined)?.enum;
  if (error.keyword === "type" && Array.isArray(allowed))
    return `${where} must be one of ${allowed.join(", ")}`;
  if (error.keyword === "enum")
    return `${where} must be one of ${(params.allowedValues as unknown[]).join(", ")}`;
  return `${where} ${error.message ?? "is not valid"}`;
}

/**
 * The wording for a value a client or a backend sent: its member names are its own text, quoted
 * as client text (cut short, never through a key). Keys in the message are redacted where it is
 * written (Exchange.redact), which sees them whole.
 */
export function untrustedValueWording(subject: string): ErrorWording {
  return {
    field: (pointer) => (pointer === "" ? subject : pointer),
    quote: quotedClientText,
  };
}

/**
 * The branches of an anyOf that none matched, or of a oneOf that none matched (a oneOf that more
 * than one branch matched is not a missing alternative: ajv's own message says so).
 */
function alternativesOf(error: ErrorObject): Branches | undefined {
  const missedEveryBranch =
    error.keyword === "anyOf" || (error.keyword === "oneOf" && error.params.passingSchemas === null);
  if (!missedEveryBranch) return undefined;
  return (error.parentSchema as Record<string, Branches> | undefined)?.[error.keyword];
}

function alternatives(branches: Branches): string {
  return branches
    .map((branch) => {
      // A branch whose shape a reader cannot guess from its keywords (an origin) says it in words.
      if (typeof branch.description === "string") return branch.description;
      if (branch.const !== undefined) return JSON.stringify(branch.const);
      if (typeof branch.pattern === "string") return `a string matching ${branch.pattern}`;
      if (branch.type === "integer") return `an integer from ${branch.minimum} to ${branch.maximum}`;
      return String(branch.type ?? "something else");
    })
    .join(" or ");
}

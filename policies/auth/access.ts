// Which operations need a key, from the document: an operation is public only if it says
// `security: []` itself. Everything else needs a bearer key, whatever the document names instead
// (nothing, another scheme, an anonymous `{}` alternative, or `security: []` at the document's
// level, which a forgotten operation-level requirement would otherwise open): authentication
// fails closed, and start-up names the operations where the document asked for something else.
import type { ApiDescription, Operation } from "../../src/openapi.ts";
import type { SecurityScheme } from "../../src/openapi-security.ts";
import type { PlanWarning } from "../../src/policy.ts";

export interface OperationAccess {
  readonly public: boolean;
  /** Why the key is required although the document does not ask for a bearer key; undefined when it does. */
  readonly unlike: string | undefined;
}

export interface Access {
  of(operation: Operation): OperationAccess;
  readonly warnings: readonly PlanWarning[];
}

const BEARER_ONLY: OperationAccess = { public: false, unlike: undefined };
const PUBLIC: OperationAccess = { public: true, unlike: undefined };

export function accessOf(api: ApiDescription): Access {
  const byId = new Map(
    api.operations.map((operation) => [operation.id, accessOfOperation(operation)] as const),
  );
  const unlike = api.operations.filter((operation) => byId.get(operation.id)?.unlike !== undefined);
  const warnings: PlanWarning[] =
    unlike.length === 0
      ? []
      : [
          {
            warning: "security-not-bearer",
            message: `a bearer key is required where the document asks for none or for another scheme: ${unlike
              .map((operation) => `${operation.id} (${byId.get(operation.id)?.unlike})`)
              .join(", ")}`,
            operations: unlike.map((operation) => operation.id),
          },
        ];
  return { of: (operation) => byId.get(operation.id) ?? accessOfOperation(operation), warnings };
}

function accessOfOperation(operation: Operation): OperationAccess {
  const { declaredBy, alternatives } = operation.security;
  if (declaredBy === "none") return { public: false, unlike: "no security" };
  if (alternatives.length === 0) {
    return declaredBy === "operation"
      ? PUBLIC
      : {
          public: false,
          unlike: "security: [] at the document's level; only an operation's own makes it public",
        };
  }
  const others = alternatives.filter(
    (alternative) => !(alternative.length === 1 && isBearer(alternative[0])),
  );
  if (others.length === 0) return BEARER_ONLY;
  return { public: false, unlike: others.map(describeAlternative).join(" or ") };
}

function isBearer(scheme: SecurityScheme | undefined): boolean {
  return scheme?.type === "http" && scheme.scheme === "bearer";
}

function describeAlternative(alternative: readonly SecurityScheme[]): string {
  if (alternative.length === 0) return "{} (anonymous)";
  return alternative
    .map((scheme) =>
      scheme.type === undefined
        ? `${scheme.name}, which components.securitySchemes does not declare`
        : `${scheme.name}: ${scheme.type}${scheme.scheme ? ` ${scheme.scheme}` : ""}`,
    )
    .join(" and ");
}

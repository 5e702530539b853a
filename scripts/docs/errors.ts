// docs/reference/errors.md: the error catalogue, as the gateway assembles it (catalogueOf) from the
// core's codes (src/errors.ts) and those each policy declares.
import { type CatalogueEntry, catalogueOf, coreCatalogue } from "../../src/errors.ts";
import type { AnyPolicyDefinition } from "../../src/policy.ts";
import { byCodePoint, code, page, table } from "./markdown.ts";

const INTRO = `Every error the gateway answers with itself, generated from its one catalogue of codes: the core's
(\`src/errors.ts\`) and those each policy declares. The body is the interface's Error object \`{code, message,
status}\`: the code and status are always those below; the message is the default below, or a more precise one where
the gateway knows more (\`petId must be an integer\`). The reason is the \`reason\` label of
\`gateway_rejections_total\` for every answer with that code. Sorted by status, then code.`;

export function errorsPage(policies: readonly AnyPolicyDefinition[]): string {
  const catalogue = catalogueOf(policies);
  const rows = Object.entries(catalogue)
    .sort(([a, x], [b, y]) => x.status - y.status || byCodePoint(a, b))
    .map(([name, entry]: [string, CatalogueEntry]) => [
      code(name),
      String(entry.status),
      code(entry.reason),
      entry.message,
      declaredBy(name, policies),
    ]);
  return page("Error reference", INTRO, [
    table(["Code", "Status", "Reason", "Default message", "Declared by"], rows),
  ]);
}

/** "the core", or the policies that declare the code (two may, with the same words). */
function declaredBy(name: string, policies: readonly AnyPolicyDefinition[]): string {
  if (Object.hasOwn(coreCatalogue, name)) return "the core";
  const owners = policies.filter(
    (policy) => policy.errors !== undefined && Object.hasOwn(policy.errors.codes, name),
  );
  return `${owners.length === 1 ? "policy" : "policies"} ${owners.map((policy) => code(policy.name)).join(", ")}`;
}

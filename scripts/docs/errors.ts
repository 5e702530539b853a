// docs/reference/errors.md: the error catalogue, as the gateway assembles it (catalogueOf) from the
// core's codes (src/errors.ts) and those each policy declares, and the codes of a refused start-up.
import { type CatalogueEntry, catalogueOf, coreCatalogue } from "../../src/errors.ts";
import type { AnyPolicyDefinition } from "../../src/policy-registry.ts";
import { STARTUP_ERROR_CODES } from "../../src/startup-errors.ts";
import { byCodePoint, code, page, table } from "./markdown.ts";

const INTRO = `Every error code of the gateway, generated from the code: the answers it writes itself, from its one
catalogue of codes (the core's in \`src/errors.ts\` and those each policy declares), and the reasons it refuses to
start (\`src/startup-errors.ts\`).`;

const ANSWERS = `Every answer the gateway writes itself is the interface's Error object \`{code, message, status}\`: the
code and status are always those below; the message is the default below, or a more precise one where the gateway
knows more (\`petId must be an integer\`). The reason is the \`reason\` label of \`gateway_rejections_total\` for
every answer with that code. Sorted by status, then code.`;

const STARTUP = `A refused start-up exits with code 1 and one line \`petstore-gateway: <what to fix>\`. A program that embeds
the gateway tells the failures apart by the error's \`code\` (a \`StartupError\`), which stays the same when a
message is reworded.`;

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
  const startup = Object.entries(STARTUP_ERROR_CODES)
    .sort(([a], [b]) => byCodePoint(a, b))
    .map(([name, meaning]) => [code(name), meaning]);
  return page("Error reference", INTRO, [
    "## Answers",
    ANSWERS,
    table(["Code", "Status", "Reason", "Default message", "Declared by"], rows),
    "## Start-up errors",
    STARTUP,
    table(["Code", "Meaning"], startup),
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

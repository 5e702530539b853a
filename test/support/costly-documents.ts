// OpenAPI documents that are valid but cost the gateway more to read than any real description
// does: the shapes an outside review used to stall start-up (YAML aliases that each stand for a
// large schema, and a very large number of plain operations).
import { minimalDocument } from "./openapi-documents.ts";

/**
 * A YAML document of about `bytes` whose one large schema (an anchor) is used by `aliases`
 * operations through an alias each: few aliases, so the alias count allows it, but each expands
 * to the whole schema.
 */
export function aliasedSchemaYaml(options: { readonly aliases: number; readonly bytes: number }): string {
  const lines = [
    "openapi: 3.1.0",
    "info: {title: aliased, version: '1'}",
    "paths:",
    "  /pets:",
    "    get:",
    "      operationId: listPets",
    "      responses:",
    "        '200':",
    "          description: ok",
    "          content:",
    "            application/json:",
    "              schema: &big",
    "                type: object",
    "                properties:",
  ];
  // Groups of a hundred properties: one object of thousands would be a cost of its own.
  let size = lines.join("\n").length;
  for (let index = 0; size < options.bytes; index++) {
    const group =
      index % 100 === 0
        ? [
            `                  g${index}:`,
            "                    type: object",
            "                    properties:",
          ]
        : [];
    const line = `                      p${index}: {type: string, maxLength: ${index + 1}}`;
    lines.push(...group, line);
    size += [...group, line].join("\n").length + 1;
  }
  for (let index = 1; index < options.aliases + 1; index++) {
    lines.push(
      `  /pets${index}:`,
      "    get:",
      `      operationId: listPets${index}`,
      "      responses:",
      "        '200':",
      "          description: ok",
      "          content:",
      "            application/json:",
      "              schema: *big",
    );
  }
  lines.push("components:", "  schemas:", "    Error: {type: object}", "");
  return lines.join("\n");
}

/** A JSON document with `count` plain operations: GET /things/n, a query parameter, a JSON answer. */
export function manyOperationsDocument(count: number): Record<string, unknown> {
  const document = minimalDocument();
  const paths: Record<string, unknown> = {};
  for (let index = 0; index < count; index++) {
    paths[`/things/${index}`] = {
      get: {
        operationId: `getThing${index}`,
        parameters: [{ name: "limit", in: "query", schema: { type: "integer", minimum: 1 } }],
        responses: {
          "200": { description: "ok", content: { "application/json": { schema: { type: "object" } } } },
        },
      },
    };
  }
  document.paths = paths;
  return document;
}

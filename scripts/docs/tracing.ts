// docs/reference/tracing.md: every attribute the gateway puts on its spans and their resource,
// from the table the tracing module sets them by (src/tracing/attributes.ts).
import {
  type AttributeRow,
  CLIENT_SPAN_ATTRIBUTES,
  RESOURCE_ATTRIBUTES,
  SERVER_SPAN_ATTRIBUTES,
} from "../../src/tracing/attributes.ts";
import { code, page, table } from "./markdown.ts";

const INTRO = `Every attribute of the spans the gateway exports over OTLP when tracing is on, generated from the table the
tracing module sets them by (\`src/tracing/attributes.ts\`). How to turn tracing on, what a collector can and cannot
do to a request, and the trace context's rules: [tracing](../tracing.md). OpenTelemetry's HTTP semantic conventions
where one fits; the gateway's own facts under \`gateway.\`. A string value is cut at 256 characters; no value holds a
key (the access line's redaction runs first).`;

const SERVER = `One per request, refused ones included (kind \`SERVER\`), named \`<method> <route>\` (\`GET /v1/pets\`), or
\`<method>\` when no operation matched. Its parent is the client's span when the request carried a valid
\`traceparent\`. Error status only for a 5xx. In decision mode, one per decision (\`/decide/<proxy>\`), described by
the original request the proxy reported, and the child of the \`traceparent\` the decision call carried (the
client's, or the proxy's own span); nginx's render endpoint makes none.`;

const CLIENT = `One per backend call (kind \`CLIENT\`), from its dispatch to the end of the answer or the fault, named
\`<method>\`; the child of the server span and the parent the backend's \`traceparent\` names. A refused request has
none, nor has a decision (the proxy calls the backend).`;

const RESOURCE = "The same on every span of a process (with `WORKERS`, each worker exports its own).";

function rows(attributes: readonly AttributeRow[]): string {
  return table(
    ["Attribute", "Value"],
    attributes.map((row) => [
      row.names === undefined ? code(row.name) : `${code(row.name)}: ${row.names.map(code).join(", ")}`,
      row.value,
    ]),
  );
}

export function tracingPage(): string {
  return page("Span reference", INTRO, [
    "## Server span",
    SERVER,
    rows(SERVER_SPAN_ATTRIBUTES),
    "## Client span",
    CLIENT,
    rows(CLIENT_SPAN_ATTRIBUTES),
    "## Resource",
    RESOURCE,
    rows(RESOURCE_ATTRIBUTES),
  ]);
}

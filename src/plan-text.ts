// The plan as people read it (npm run plan), and as tools do (--format json): the text names
// every operation with its method and public path, public ones first, then what each policy does.
// Names come from the document and the config, which someone else may have written: no control
// character of theirs reaches the operator's terminal (an ESC could clear it or retitle it, a CR
// or a bidi override could make one line read as another).
import { PROXY_CAPABILITIES } from "./decision/capabilities.ts";
import type { GatewayPlan, PlannedOperation, PlannedParameter, ProxyShortfall } from "./plan.ts";
import { terminalSafeJson, withoutTerminalControls } from "./terminal-text.ts";

export interface PlanSources {
  readonly openapi: string;
  readonly config: string;
}

export function planText(plan: GatewayPlan, sources: PlanSources): string {
  const open = plan.operations.filter((operation) => operation.public);
  const keyed = plan.operations.filter((operation) => !operation.public);
  const lines = [
    `${plan.title} ${plan.version}: what petstore-gateway will enforce`,
    `document ${sources.openapi}, config ${sources.config}, environment ${plan.environment}, base path ${plan.basePath || "/"}`,
    `upstream ${plan.upstream}`,
    "",
    `Public operations (no key): ${
      open.length === 0
        ? "none (an operation is public only when it says security: [] itself)"
        : open.map((operation) => `${operation.method} ${operation.path}`).join(", ")
    }`,
  ];
  for (const operation of [...open, ...keyed]) lines.push("", ...operationText(operation));
  lines.push("", "Ignored or not enforced as written (start-up logs each as one warn line):");
  if (plan.warnings.length === 0) lines.push("  nothing");
  for (const warning of plan.warnings) {
    lines.push(`  - ${warning.message} [${warning.policy ?? "core"}: ${warning.warning}]`);
    for (const fix of warning.fixes ?? []) lines.push(`    add to the config: ${fix}`);
  }
  // Every line holds names; the line breaks are the plan's own, added after.
  return `${lines.map(withoutTerminalControls).join("\n")}\n`;
}

/** The plan as JSON: the policies' data, without the text lines. */
export function planJson(plan: GatewayPlan, sources: PlanSources): string {
  const operations = plan.operations.map(({ text: _text, ...rest }) => rest);
  // Escaped rather than stripped: a tool reading the JSON gets the names exactly as written.
  return `${terminalSafeJson(JSON.stringify({ ...sources, ...plan, operations }, null, 2))}\n`;
}

function operationText(operation: PlannedOperation): string[] {
  const lines = [
    `${operation.method} ${operation.path} (${operation.operation})`,
    `  forwarded to: ${operation.method} ${operation.forwardedTo}`,
  ];
  if (operation.parameters.length > 0) {
    lines.push("  parameters:");
    for (const parameter of operation.parameters) lines.push(`    ${parameterText(parameter)}`);
  }
  const pageSize = operation.pageSize;
  if (pageSize !== null) {
    lines.push(
      pageSize.parameter === null
        ? `  page size: not inferred (${pageSize.reason})`
        : `  page size: ${pageSize.parameter} (${pageSize.source === "name" ? "by its name" : `marked ${pageSize.source}`})`,
    );
  }
  const body = operation.requestBody;
  if (body) {
    lines.push(`  request body (${body.required ? "required" : "optional"}):`);
    for (const entry of body.content) {
      lines.push(`    ${entry.mediaType}: ${entry.checked ? entry.schema : `not checked (${entry.schema})`}`);
    }
  }
  for (const { policy, lines: said } of operation.text) {
    for (const line of said) lines.push(`  ${policy}: ${line}`);
  }
  for (const shortfall of operation.decisionMode) lines.push(`  decision mode: ${shortfallText(shortfall)}`);
  return lines;
}

function shortfallText(shortfall: ProxyShortfall): string {
  const through = `through ${PROXY_CAPABILITIES[shortfall.proxy].title}`;
  if (shortfall.givesUp === "request-body-validation") {
    return `${through} the request body is not validated (${shortfall.because})`;
  }
  const { parameters, policy } = shortfall;
  const named =
    parameters.length === 1
      ? `the query parameter ${parameters[0]} reaches the backend as the client sent it, not as the ${policy} policy sets it`
      : `the query parameters ${parameters.join(", ")} reach the backend as the client sent them, not as the ${policy} policy sets them`;
  return `${through} ${named} (${shortfall.because})`;
}

function parameterText(parameter: PlannedParameter): string {
  if (!parameter.checked) return `${parameter.name} (${parameter.in}): not checked (${parameter.reason})`;
  const kind = [parameter.type, parameter.format].filter((part) => part !== undefined).join(" ");
  const facts: string[] = [];
  if (parameter.default !== undefined) facts.push(`default ${JSON.stringify(parameter.default)}`);
  if (parameter.minimum !== undefined) facts.push(`minimum ${parameter.minimum}`);
  if (parameter.maximum !== undefined) facts.push(`maximum ${parameter.maximum}`);
  if (parameter.enum) facts.push(`one of ${parameter.enum.map((v) => JSON.stringify(v)).join(", ")}`);
  const head = `${parameter.name} (${parameter.in}, ${parameter.required ? "required" : "optional"}${kind ? `, ${kind}` : ""})`;
  return facts.length === 0 ? head : `${head}: ${facts.join(", ")}`;
}

// The policies as the core holds them: the ordered list (policies/index.ts) of definitions of any
// options, and each one's options read back, typed, from the validated config. Not part of the
// contract a policy is written against (src/policy.ts): no policy reads another.
import type { Registry } from "prom-client";
import type { DocumentDifference } from "./document-diff.ts";
import type { PolicyErrors } from "./errors.ts";
import type { ApiDescription } from "./openapi.ts";
import type {
  OpsReport,
  PlanContext,
  PolicyContext,
  PolicyDefinition,
  PolicyInstance,
  PolicyPlan,
} from "./policy.ts";

/**
 * A policy of any options, as the ordered list and the core hold it. create() is a method, so a
 * PolicyDefinition<Options> is one without a cast (method parameters compare both ways): what
 * makes the call sound is that the core passes only the options the config validated against
 * that same definition's schema.
 */
export interface AnyPolicyDefinition {
  readonly name: string;
  readonly optionsSchema: object;
  readonly environment?: Readonly<Record<string, string>>;
  readonly errors?: PolicyErrors;
  metrics?(registry: Registry): unknown;
  readonly opsReports?: Readonly<Record<string, OpsReport>>;
  plan?(options: unknown, context: PlanContext): PolicyPlan;
  compareDocuments?(
    options: unknown,
    running: ApiDescription,
    candidate: ApiDescription,
  ): readonly DocumentDifference[];
  create(options: unknown, context: PolicyContext, instruments: unknown): PolicyInstance;
}

/**
 * A policy's options as the validated config holds them, typed by the policy's definition
 * (undefined when the config was validated without that policy). The one place the type is
 * asserted rather than inferred: validateConfig checked these options against that definition's
 * schema, which the compiler holds to its Options type.
 */
export function optionsOf<Options, Instruments>(
  config: { readonly policies: Readonly<Record<string, unknown>> },
  definition: PolicyDefinition<Options, Instruments>,
): Options | undefined {
  return config.policies[definition.name] as Options | undefined;
}

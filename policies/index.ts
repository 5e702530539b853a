// The policies, in the order they judge a request. The order is fixed here, not by config:
// authentication runs before anything that could reveal the schema.
import type { AnyPolicyDefinition } from "../src/policy.ts";

const policies: readonly AnyPolicyDefinition[] = [];

export default policies;

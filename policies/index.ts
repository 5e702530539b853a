// The policies, in the order they judge a request. The order is fixed here, not by config:
// authentication runs before anything that could reveal the schema, and the limit is
// defaulted and clamped before validation would refuse an out-of-range value.
import type { AnyPolicyDefinition } from "../src/policy.ts";
import auth from "./auth.ts";
import limit from "./limit.ts";
import requestValidation from "./request-validation.ts";

const policies: readonly AnyPolicyDefinition[] = [auth, limit, requestValidation];

export default policies;

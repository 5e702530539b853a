// The policies, in the order they judge a request. The order is fixed here, not by config:
// CORS comes first, because a browser's preflight carries no key and must be answered before
// authentication; authentication runs before anything that could reveal the schema, the
// lifecycle judges only authenticated calls (so it can name the caller), and the limit is
// defaulted and clamped before validation would refuse an out-of-range value. Outbound phases
// run in reverse, so the response contract, last here, judges the backend's answer first.
import type { AnyPolicyDefinition } from "../src/policy-registry.ts";
import auth from "./auth/index.ts";
import cors from "./cors/index.ts";
import lifecycle from "./lifecycle/index.ts";
import limit from "./limit/index.ts";
import requestValidation from "./request-validation/index.ts";
import responseContract from "./response-contract/index.ts";
import usage from "./usage/index.ts";

const policies: readonly AnyPolicyDefinition[] = [
  cors,
  auth,
  lifecycle,
  // Before the limit defaults a page size: usage records the query names the client sent.
  usage,
  limit,
  requestValidation,
  responseContract,
];

export default policies;

// The lifecycle's refusals: one reason, "lifecycle", for the deprecation's and the stability's codes.
import { declareErrors } from "../../src/policy.ts";

export const errors = declareErrors("lifecycle", {
  OPERATION_SUNSET: { status: 410, message: "The operation has been removed" },
  OPERATION_BROWNOUT: {
    status: 410,
    message: "The operation is deprecated and temporarily unavailable (brownout)",
  },
  OPERATION_NOT_AVAILABLE: {
    status: 403,
    message: "The operation is experimental and not available in this environment",
  },
});

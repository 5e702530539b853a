import { errorCatalogue } from "../../src/index.ts";

/** Every status the docs name: the error catalogue and the interface's own answers. */
export const DOCUMENTED_STATUSES: ReadonlySet<number> = new Set([
  200,
  201,
  204, // a CORS preflight
  ...Object.values(errorCatalogue).map((entry) => entry.status),
]);

// "Nothing reached the backend" proven by an event, not by a sleep: a request sent afterwards,
// on a connection of its own, reaching the backend shows that the gateway has gone round its
// loop past whatever the test did before; anything that was going to be forwarded has been.
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { RecordedRequest } from "../fixtures/programmable-backend.ts";
import { eventually } from "./eventually.ts";

/**
 * Sends a GET of `url` (a gateway URL of an operation) with a fresh X-Request-Id, waits until
 * `backend` has recorded it, and returns that id, for the caller to leave out of what it counts.
 * Its answer is not awaited: the backend may be holding every request.
 */
export async function sentinelReached(
  url: string,
  key: string,
  backend: { readonly requests: readonly RecordedRequest[] },
): Promise<string> {
  const id = `sentinel-${randomUUID()}`;
  const req = http.get(url, { headers: { authorization: `Bearer ${key}`, "x-request-id": id } });
  req.on("error", () => {});
  try {
    await eventually(`the sentinel ${id} at the backend`, () =>
      backend.requests.some((seen) => seen.headers["x-request-id"] === id),
    );
  } finally {
    req.destroy();
  }
  return id;
}

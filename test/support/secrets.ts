// Where a key must never show up: log lines, error bodies, /metrics.
import assert from "node:assert/strict";
import type { OtlpReceiver } from "../fixtures/otlp-receiver.ts";
import type { TestGateway } from "./gateway.ts";
import { request } from "./http.ts";
import { type ApiKey, sha256 } from "./keys.ts";

/**
 * Asserts that no key, and no full SHA-256 digest of one, appears in any of the texts (log
 * lines, error bodies, /metrics). A digest is what the key file holds: it must not leak either.
 */
export function assertNoSecrets(keys: readonly ApiKey[], texts: Iterable<string>, where: string): number {
  return assertNoneOf(
    keys.map(({ key }) => key),
    texts,
    where,
  );
}

/**
 * Asserts that none of the clear secrets (API keys, the ops token), nor the SHA-256 digest of one
 * (what the gateway holds), appears in any of the texts.
 */
export function assertNoneOf(clear: readonly string[], texts: Iterable<string>, where: string): number {
  const secrets = clear.flatMap((secret) => [secret, sha256(secret)]);
  let checked = 0;
  for (const text of texts) {
    checked++;
    for (const secret of secrets) {
      assert.ok(!text.includes(secret), `${where} holds a secret or its digest: ${text.slice(0, 300)}`);
    }
  }
  return checked;
}

/** A test gateway's log lines, its /metrics and the answers a test kept: where a key must never be. */
export async function capturedOutputs(gw: TestGateway, answers: Iterable<string> = []): Promise<string[]> {
  const metrics = await request(`${gw.opsUrl}/metrics`);
  return [...gw.logs.raw, ...answers, metrics.body];
}

/**
 * What a collector got from the gateway, as texts a secrets check reads: each span's name, trace
 * state, status message, attributes, events and resource as decoded, and each export's raw bytes
 * (a string in a protobuf body is its UTF-8 bytes as they are).
 */
export function spanTexts(receiver: OtlpReceiver): string[] {
  const texts = receiver.spans.map((span) =>
    JSON.stringify({
      name: span.name,
      traceId: span.traceId,
      traceState: span.traceState,
      status: span.statusMessage,
      attributes: span.attributes,
      events: span.events,
      resource: span.resource,
    }),
  );
  for (const body of receiver.bodies) texts.push(body.toString("utf8"), body.toString("latin1"));
  return texts;
}

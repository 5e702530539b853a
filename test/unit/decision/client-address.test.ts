// Whom a decision is about (src/decision/doors.ts): the client's address a proxy sets is believed
// only when the decision call's peer is a trusted proxy, as proxy mode believes X-Forwarded-For;
// else the peer is the client. Only the hop the proxy wrote counts, never what a client sent.
import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { test } from "node:test";
import { clientOfDecision, doorNamed, type Entered } from "../../../src/decision/doors.ts";
import { trustedProxies } from "../../../src/trusted-proxies.ts";

/** A door's call as the proxy sends it: only what enter() reads. */
function call(url: string, headers: Record<string, string>): IncomingMessage {
  return { url, method: "GET", headers: { ...headers } } as unknown as IncomingMessage;
}

const enter = (door: string, url: string, headers: Record<string, string>): Entered => {
  const found = doorNamed(door);
  assert.ok(found, door);
  return found.enter(call(url, headers));
};

const nginxCall = (forwardedFor: string) =>
  enter("nginx", "/decide/nginx", {
    "x-original-method": "GET",
    "x-original-uri": "/v1/pets",
    "x-forwarded-for": forwardedFor,
  });

test("from a trusted proxy, the client is the address the proxy set", () => {
  const trusted = trustedProxies(["10.0.0.0/8"]);
  assert.equal(clientOfDecision("10.1.2.3", nginxCall("203.0.113.9"), trusted), "203.0.113.9");
  // As a dual-stack socket shows an IPv4 peer.
  assert.equal(clientOfDecision("::ffff:10.1.2.3", nginxCall("203.0.113.9"), trusted), "203.0.113.9");
});

test("from any other peer, the peer is the client, whatever the call says", () => {
  const trusted = trustedProxies(["10.0.0.0/8"]);
  assert.equal(clientOfDecision("192.0.2.4", nginxCall("203.0.113.9"), trusted), "192.0.2.4");
  assert.equal(clientOfDecision("::ffff:192.0.2.4", nginxCall("203.0.113.9"), trusted), "192.0.2.4");
  // No trusted proxy configured (the default): never the header.
  assert.equal(clientOfDecision("10.1.2.3", nginxCall("203.0.113.9"), trustedProxies([])), "10.1.2.3");
});

test("only the hop the proxy wrote counts: a client's claim to the left of it never steers the address", () => {
  // Envoy appends the client's address to what the client sent; the client's hop is in a trusted range.
  const trusted = trustedProxies(["10.0.0.0/8"]);
  const envoy = enter("envoy", "/decide/envoy/v1/pets", { "x-forwarded-for": "198.51.100.66, 10.9.9.9" });
  assert.equal(clientOfDecision("10.1.2.3", envoy, trusted), "10.9.9.9");
  const caddy = enter("caddy", "/decide/caddy", {
    "x-forwarded-method": "GET",
    "x-forwarded-uri": "/v1/pets",
    "x-forwarded-for": "198.51.100.66,203.0.113.9",
  });
  assert.equal(clientOfDecision("10.1.2.3", caddy, trusted), "203.0.113.9");
});

test("a call that does not say the original request, or no door at all: the peer", () => {
  const trusted = trustedProxies(["10.0.0.0/8"]);
  const unsaid = enter("nginx", "/decide/nginx", { "x-forwarded-for": "203.0.113.9" });
  assert.ok("problem" in unsaid);
  assert.equal(clientOfDecision("10.1.2.3", unsaid, trusted), "10.1.2.3");
  assert.equal(clientOfDecision("10.1.2.3", undefined, trusted), "10.1.2.3");
});

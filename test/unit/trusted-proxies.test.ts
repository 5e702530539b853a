// Trusted proxies (src/trusted-proxies.ts): addresses and ranges compared as addresses, not as
// text, so a peer cannot be trusted by writing its address another way, nor a stranger by luck.
import assert from "node:assert/strict";
import { test } from "node:test";
import { isIpRange, trustedProxies, unmappedAddress } from "../../src/trusted-proxies.ts";

test("no entries: no peer is trusted", () => {
  const trusted = trustedProxies([]);
  for (const address of ["127.0.0.1", "::1", "10.0.0.1"]) assert.equal(trusted(address), false, address);
});

test("an IPv4 range trusts the addresses inside it and no other", () => {
  const trusted = trustedProxies(["10.0.0.0/8", "192.168.1.7"]);
  assert.equal(trusted("10.255.3.4"), true);
  assert.equal(trusted("192.168.1.7"), true);
  assert.equal(trusted("11.0.0.1"), false);
  assert.equal(trusted("192.168.1.8"), false);
  // As a dual-stack socket shows an IPv4 peer: the same address.
  assert.equal(trusted("::ffff:10.0.0.1"), true);
  assert.equal(trusted("::ffff:11.0.0.1"), false);
});

test("IPv6 addresses compare as addresses: every way of writing one is the same peer", () => {
  const trusted = trustedProxies(["fd00::/8", "::1"]);
  assert.equal(trusted("fd12:3456::1"), true);
  assert.equal(trusted("0:0:0:0:0:0:0:1"), true);
  assert.equal(trusted("::2"), false);
  assert.equal(trusted("fe80::1"), false);
});

test("an entry written as a mapped IPv4 address trusts that IPv4 address", () => {
  const trusted = trustedProxies(["::ffff:10.1.2.3"]);
  assert.equal(trusted("10.1.2.3"), true);
});

test("what is not an address is never trusted", () => {
  const trusted = trustedProxies(["0.0.0.0/0", "::/0"]);
  assert.equal(trusted("10.0.0.1"), true);
  assert.equal(trusted("2001:db8::1"), true);
  for (const text of ["", "localhost", "10.0.0.1, 10.0.0.2", "unknown"])
    assert.equal(trusted(text), false, text);
});

test("a range is an address with a prefix length its family allows", () => {
  for (const range of ["10.0.0.0/8", "0.0.0.0/0", "192.168.1.7/32", "fd00::/8", "::/128"]) {
    assert.equal(isIpRange(range), true, range);
  }
  for (const text of [
    "10.0.0.0/33",
    "fd00::/129",
    "10.0.0.0/08",
    "10.0.0.0/",
    "10.0.0/8",
    "host/8",
    "10.0.0.0",
  ]) {
    assert.equal(isIpRange(text), false, text);
  }
});

test("a dual-stack socket's mapped IPv4 address is that IPv4 address; IPv6 stays as it is", () => {
  assert.equal(unmappedAddress("::ffff:10.1.2.3"), "10.1.2.3");
  assert.equal(unmappedAddress("::ffff:a01:203"), "::ffff:a01:203");
  assert.equal(unmappedAddress("fd00::1"), "fd00::1");
});

test("the same peer asked again, then another, gets each its own answer", () => {
  const trusted = trustedProxies(["10.0.0.0/8"]);
  const asked = ["10.0.0.1", "10.0.0.1", "11.0.0.1", "11.0.0.1", "10.0.0.1", "", "10.0.0.1"];
  assert.deepEqual(
    asked.map((address) => trusted(address)),
    [true, true, false, false, true, false, true],
  );
});

// The peers whose X-Forwarded-For is kept: addresses and ranges (10.0.0.0/8, fd00::/8), as a
// load balancer's or an ingress's addresses usually are in Kubernetes. Matched with Node's
// BlockList, so that an address is compared as an address (::1 and 0:0:0:0:0:0:0:1 alike), not
// as text.
import { BlockList, isIP } from "node:net";

/** Whether an address (unmapped: see unmappedAddress) is a trusted proxy. */
export type TrustedProxies = (address: string) => boolean;

const NONE: TrustedProxies = () => false;

/** Entries as the config schema lets them through: an IP address, or a range (isIpRange). */
export function trustedProxies(entries: readonly string[]): TrustedProxies {
  if (entries.length === 0) return NONE;
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split("/") as [string, string | undefined];
    const plain = unmappedAddress(address);
    const family = isIP(plain) === 6 ? "ipv6" : "ipv4";
    if (prefix === undefined) list.addAddress(plain, family);
    else list.addSubnet(plain, Number(prefix), family);
  }
  // Asked on every request (twice in proxy mode) about the peer, which is nearly always the same
  // few proxies: the last answer is kept, as isIP and BlockList.check cost about 1 % of a decision.
  let lastAddress: string | undefined;
  let lastTrusted = false;
  return (address) => {
    if (address === lastAddress) return lastTrusted;
    const version = isIP(address);
    lastTrusted = version !== 0 && list.check(address, version === 6 ? "ipv6" : "ipv4");
    lastAddress = address;
    return lastTrusted;
  };
}

/** An address with a prefix length that fits it: 10.0.0.0/8, fd00::/8 (the config's "ip-range" format). */
export function isIpRange(text: string): boolean {
  const match = /^([^/]+)\/(0|[1-9][0-9]{0,2})$/.exec(text);
  if (!match) return false;
  const version = isIP(match[1] as string);
  return version !== 0 && Number(match[2]) <= (version === 6 ? 128 : 32);
}

/** An IPv4 address as a dual-stack socket shows it (::ffff:10.1.2.3) is that IPv4 address. */
export function unmappedAddress(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

// The peers whose X-Forwarded-For is kept: addresses and ranges (10.0.0.0/8, fd00::/8), as a
// load balancer's or an ingress's addresses usually are in Kubernetes. Matched with Node's
// BlockList, so that an address is compared as an address (::1 and 0:0:0:0:0:0:0:1 alike, an
// IPv4 peer seen as ::ffff:10.1.2.3 too), not as text.
import { BlockList, isIP } from "node:net";
import { ConfigError } from "./config.ts";

/** Whether an address (as a socket or an X-Forwarded-For hop gives it) is a trusted proxy. */
export type TrustedProxies = (address: string) => boolean;

const NONE: TrustedProxies = () => false;

/** Entries as the config schema lets them through: an IPv4 or IPv6 address, or one with a /prefix. */
export function trustedProxies(entries: readonly string[]): TrustedProxies {
  if (entries.length === 0) return NONE;
  const list = new BlockList();
  for (const [index, entry] of entries.entries()) {
    const slash = entry.indexOf("/");
    const address = unmapped(slash === -1 ? entry : entry.slice(0, slash));
    const version = isIP(address);
    // The schema's pattern for an IPv6 range is loose about the address part.
    if (version === 0) {
      throw new ConfigError(`invalid config: /server/trustedProxies/${index} is not an IP address or range`);
    }
    const family = version === 6 ? "ipv6" : "ipv4";
    if (slash === -1) list.addAddress(address, family);
    else list.addSubnet(address, Number(entry.slice(slash + 1)), family);
  }
  return (address) => {
    const plain = unmapped(address);
    const version = isIP(plain);
    return version !== 0 && list.check(plain, version === 6 ? "ipv6" : "ipv4");
  };
}

/** An IPv4 address as a dual-stack socket shows it (::ffff:10.1.2.3) is that IPv4 address. */
function unmapped(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

// Listening on a configured address. Node's own failure ("getaddrinfo ENOTFOUND 999.1.1.1",
// "bind EADDRINUSE ...") names no setting and, for a host that does not resolve, no port: the
// failure here names the address and the settings that chose it.
import { once } from "node:events";
import { isIPv6, type Server } from "node:net";
import { type GatewayConfig, settingName } from "./config.ts";

export class ListenError extends Error {
  override name = "ListenError";
}

const LISTENERS = {
  public: { host: "/host", port: "/port" },
  ops: { host: "/opsHost", port: "/opsPort" },
} as const;

/** Listens on the public or the ops address of the config; rejects with a ListenError. */
export async function listen(
  server: Server,
  config: GatewayConfig,
  which: keyof typeof LISTENERS,
): Promise<void> {
  const [host, port] = which === "public" ? [config.host, config.port] : [config.opsHost, config.opsPort];
  server.listen(port, host);
  try {
    await once(server, "listening");
  } catch (error) {
    const settings = LISTENERS[which];
    const address = isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
    throw new ListenError(
      `cannot listen on ${address} (${settingName(settings.host)}, ${settingName(settings.port)}): ${(error as Error).message}`,
      { cause: error },
    );
  }
}

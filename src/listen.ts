// Listening on a configured address. Node's own failure ("getaddrinfo ENOTFOUND 999.1.1.1",
// "bind EADDRINUSE ...") names no setting and, for a host that does not resolve, no port: the
// failure here names the address and the settings that chose it.
import { once } from "node:events";
import { isIPv6, type Server } from "node:net";
import { settingName } from "./config.ts";
import type { GatewayConfig } from "./config-schema.ts";
import { ListenError } from "./startup-errors.ts";

/** The config fields that give each listener its address. */
const LISTENERS = {
  public: ["host", "port"],
  ops: ["opsHost", "opsPort"],
} as const;

/** Listens on the public or the ops address of the config; rejects with a ListenError. */
export async function listen(
  server: Server,
  config: GatewayConfig,
  which: keyof typeof LISTENERS,
): Promise<void> {
  const [hostField, portField] = LISTENERS[which];
  const [host, port] = [config[hostField], config[portField]];
  server.listen(port, host);
  try {
    await once(server, "listening");
  } catch (error) {
    const address = isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
    throw new ListenError(
      `cannot listen on ${address} (${settingName(`/${hostField}`)}, ${settingName(`/${portField}`)}): ${(error as Error).message}`,
      { cause: error },
    );
  }
}

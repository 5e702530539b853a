// Everything `npm start` needs to be useful with no configuration at all: the bundled demo
// backend on a loopback port and a freshly generated API key whose digest alone goes to a
// private temporary key file.
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDemoBackend } from "./demo-backend.ts";

export interface DemoSetup {
  readonly upstreamUrl: string;
  /** Shown once on the start-up line; never logged anywhere else. */
  readonly apiKey: string | undefined;
  /** Environment additions for the gateway's config (API_KEYS_FILE when none was given). */
  readonly env: Readonly<Record<string, string>>;
  close(): Promise<void>;
}

export async function startDemo(options: { readonly keysFileGiven: boolean }): Promise<DemoSetup> {
  const backend: Server = createDemoBackend();
  await new Promise<void>((resolve, reject) => {
    backend.once("error", reject);
    backend.listen(0, "127.0.0.1", resolve);
  });
  const { port } = backend.address() as AddressInfo;
  let apiKey: string | undefined;
  let directory: string | undefined;
  const env: Record<string, string> = {};
  if (!options.keysFileGiven) {
    apiKey = `demo_${randomBytes(24).toString("base64url")}`;
    directory = mkdtempSync(join(tmpdir(), "petstore-gateway-"));
    const file = join(directory, "api-keys.json");
    const sha256 = createHash("sha256").update(apiKey).digest("hex");
    writeFileSync(file, `${JSON.stringify({ keys: [{ consumer: "demo", sha256 }] }, null, 2)}\n`, {
      mode: 0o600,
    });
    env.API_KEYS_FILE = file;
  }
  return {
    upstreamUrl: `http://127.0.0.1:${port}/v1`,
    apiKey,
    env,
    async close() {
      backend.closeAllConnections();
      await new Promise<void>((resolve) => backend.close(() => resolve()));
      if (directory) rmSync(directory, { recursive: true, force: true });
    },
  };
}

// The OpenTelemetry SDK and its exporters weigh about 32 MB of RSS once imported (measured with
// `node -e` on Node 24: the seven packages together), a fifth of the gateway's budget at 1,000
// connections. A gateway without an OTLP endpoint must not pay that, so the tracing module is
// imported only when tracing is on: the caller awaits loadTracing() before building the gateway.
import type { createTracing } from "./index.ts";

let factory: typeof createTracing | undefined;

/** Imports the tracing module once; what createGateway() then uses when given tracing settings. */
export async function loadTracing(): Promise<typeof createTracing> {
  factory ??= (await import("./index.ts")).createTracing;
  return factory;
}

/** The loaded factory, or undefined while loadTracing() has not been awaited. */
export function loadedTracing(): typeof createTracing | undefined {
  return factory;
}

// What the tracing tests start: settings that export to a test receiver, and the gateway in
// decision mode exporting its decisions' spans, with a backend and the proxy contract its
// generated configs are made from, for a real or simulated proxy to be put in front of.
import policies from "../../policies/index.ts";
import { validateConfig } from "../../src/config.ts";
import { contractOf } from "../../src/decision/proxy-config.ts";
import type { ProxyContract } from "../../src/decision/proxy-contract.ts";
import { type TracingSettings, tracingSettings } from "../../src/tracing/settings.ts";
import { contractAnswer } from "../fixtures/contract-answer.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../fixtures/otlp-receiver.ts";
import { type ProgrammableBackend, startProgrammableBackend } from "../fixtures/programmable-backend.ts";
import { eventually } from "./eventually.ts";
import { startGateway, type TestGateway } from "./gateway.ts";
import { type KeysFile, writeKeysFile } from "./keys.ts";

/**
 * A batch of spans leaves within this in tests (the gateway's default is 1 s): a test waits for its
 * spans, and a second per wait made test/tracing.test.ts the slowest file of npm test.
 */
export const TEST_SCHEDULE_DELAY = { OTEL_BSP_SCHEDULE_DELAY: "50" } as const;

/** The gateway's settings with nothing but an endpoint set: every request a span, over http/protobuf. */
export function exportingTo(receiverUrl: string): TracingSettings {
  const settings = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, ...TEST_SCHEDULE_DELAY });
  if (settings === undefined) throw new Error(`no tracing settings for ${receiverUrl}`);
  return settings;
}

export interface TracedDecision {
  /** One consumer, alice. */
  readonly keys: KeysFile;
  readonly receiver: OtlpReceiver;
  /** What the proxy forwards an allowed request to: answers as the contract says. */
  readonly backend: ProgrammableBackend;
  readonly gw: TestGateway;
  readonly contract: ProxyContract;
  /** The spans of one trace, once at least `count` of them have arrived. */
  spansOf(trace: string, count?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

/** Decision mode, trusting the proxy at 127.0.0.1, exporting to a receiver of its own. */
export async function startTracedDecision(): Promise<TracedDecision> {
  const keys = writeKeysFile(["alice"]);
  const receiver = await startOtlpReceiver();
  const backend = await startProgrammableBackend();
  backend.behave(contractAnswer);
  const config = {
    mode: "decision",
    server: { trustedProxies: ["127.0.0.1"] },
    policies: { auth: { keysFile: keys.file } },
  };
  const gw = await startGateway({ upstreamUrl: "", config, tracing: exportingTo(receiver.url) });
  const contract = await contractOf(validateConfig({ port: 0, opsPort: 0, ...config }, policies), policies);
  return {
    keys,
    receiver,
    backend,
    gw,
    contract,
    spansOf: (trace, count = 1) =>
      eventually(`${count} span(s) of trace ${trace}`, () => {
        const found = receiver.spans.filter((span) => span.traceId === trace);
        return found.length >= count && found;
      }),
    async close() {
      await gw.close();
      await backend.close();
      await receiver.close();
    },
  };
}

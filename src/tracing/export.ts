// The export leg: the SDK's batch processor behind a bounded queue, off the request's path, with
// every span it loses counted. The batch processor drops silently (a full queue, a batch the
// collector refused or never answered): the wrapper counts what went in and what came out.
import type { Context } from "@opentelemetry/api";
import { type ExportResult, ExportResultCode } from "@opentelemetry/core";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type Span,
  type SpanExporter,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace";
import type { Counter } from "prom-client";
import type { BatchSettings, TracingSettings } from "./settings.ts";

const SAMPLED = 1;

export interface ExportOptions {
  readonly dropped: Counter;
}

export function exportingProcessor(settings: TracingSettings, options: ExportOptions): SpanProcessor {
  const config = {
    url: settings.url,
    headers: { ...settings.headers },
    timeoutMillis: settings.batch.exportTimeoutMillis,
  };
  const exporter =
    settings.protocol === "http/json" ? new JsonExporter(config) : new ProtobufExporter(config);
  return new CountingProcessor(exporter, settings.batch, options.dropped);
}

class CountingProcessor implements SpanProcessor {
  /** Spans handed to the batch processor and not yet to the exporter: its queue's length. */
  private queued = 0;
  private closed = false;
  private readonly batch: BatchSpanProcessor;
  private readonly dropped: Counter;
  private readonly maxQueued: number;

  constructor(exporter: SpanExporter, shape: BatchSettings, dropped: Counter) {
    this.dropped = dropped;
    this.maxQueued = shape.maxQueueSize;
    const counting: SpanExporter = {
      export: (spans: ReadableSpan[], done: (result: ExportResult) => void) => {
        this.queued -= spans.length;
        exporter.export(spans, (result) => {
          if (result.code !== ExportResultCode.SUCCESS) this.dropped.inc(spans.length);
          done(result);
        });
      },
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    };
    this.batch = new BatchSpanProcessor({ exporter: counting, ...shape });
  }

  onStart(span: Span, parentContext: Context): void {
    this.batch.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    if (this.closed || (span.spanContext().traceFlags & SAMPLED) === 0) return;
    // What the batch processor does with a full queue, counted.
    if (this.queued >= this.maxQueued) {
      this.dropped.inc();
      return;
    }
    this.queued++;
    this.batch.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.batch.forceFlush();
  }

  shutdown(): Promise<void> {
    this.closed = true;
    return this.batch.shutdown();
  }
}

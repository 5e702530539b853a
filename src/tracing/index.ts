// OpenTelemetry tracing of both doors: a server span per request and a client span around the
// backend call, exported over OTLP/HTTP by the SDK (no auto-instrumentation: the gateway starts
// and ends its spans where its own pipeline knows the facts). All of it is off, and costs one
// check per request, unless an endpoint is set (settings.ts).
import {
  type Attributes,
  createTraceState,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  RandomIdGenerator,
  type Sampler,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_QUERY,
} from "@opentelemetry/semantic-conventions";
import type { Counter } from "prom-client";
import { loggedPath } from "../logged-path.ts";
import type { CoreExchange } from "../pipeline/exchange.ts";
import { withoutTrailingSlashes } from "../trailing-slashes.ts";
import {
  attributeNameOf,
  CONSUMER,
  DEPRECATED,
  FACT_PREFIX,
  NOTE_PREFIX,
  OPERATION_ID,
  REFUSAL_CODE,
  REFUSAL_REASON,
} from "./attributes.ts";
import { exportingProcessor } from "./export.ts";
import type { SamplerSetting, TracingSettings } from "./settings.ts";

export { type TracingSettings, tracingSettings } from "./settings.ts";

/** A request's spans, carried by its exchange. */
export interface ExchangeSpans {
  readonly server: Span;
  client: Span | undefined;
}

export interface Tracing {
  /** The server span of a request just opened: its ids become the exchange's traceId and spanId. */
  startServer(exchange: CoreExchange): void;
  /** The client span of the backend call, whose traceparent the backend gets. */
  startClient(exchange: CoreExchange): void;
  /** The trace id of a request whose server span is sampled (exported): its duration's exemplar. */
  exemplarOf(exchange: CoreExchange): string | undefined;
  /**
   * Both spans ended, with the request's facts, once its answer is out (observe). loggedTarget is
   * loggedPath(exchange.url, exchange), which the access line has computed already.
   */
  end(exchange: CoreExchange, status: number, loggedTarget: string): void;
  /** Exports what is queued, within timeoutMs; never rejects. */
  shutdown(timeoutMs: number): Promise<void>;
}

export interface TracingOptions {
  readonly dropped: Counter;
  /**
   * The backend's URL, for the client span's server.address and url.full; "" in decision mode,
   * where the proxy in front calls the backend and the gateway makes no client span.
   */
  readonly upstreamUrl: string;
}

const TRACER_NAME = "petstore-gateway";
const MAX_ATTRIBUTE_CHARS = 256;
const SAMPLED = 1;

/**
 * The SDK's tracer as the gateway sets it up (sampler, ids, resource), ending its spans into
 * `processor` (the export leg of export.ts): createTracing() below, and
 * scripts/bench/tracing-floor.ts, which measures what it costs alone.
 */
export function sdkTracer(settings: TracingSettings, processor: SpanProcessor) {
  const ids = new RandomIdGenerator();
  const provider = new TracerProvider({
    idGenerator: ids,
    resource: resourceFromAttributes({
      ...settings.resourceAttributes,
      [ATTR_SERVICE_NAME]: settings.serviceName,
    }),
    sampler: samplerOf(settings.sampler),
    spanProcessors: [processor],
  });
  const tracer: Tracer = provider.getTracer(TRACER_NAME);
  return { ids, provider, tracer };
}

export function createTracing(settings: TracingSettings, options: TracingOptions): Tracing {
  return createTracingWith(settings, exportingProcessor(settings, options), options);
}

/** createTracing() ending its spans into `processor` (scripts/bench/tracing-floor.ts cuts the export leg short). */
export function createTracingWith(
  settings: TracingSettings,
  processor: SpanProcessor,
  options: TracingOptions,
): Tracing {
  const { ids, provider, tracer } = sdkTracer(settings, processor);
  const upstream = upstreamFacts(options.upstreamUrl);
  const followsParent = settings.sampler.kind === "parentbased";

  return {
    startServer(exchange) {
      const method = exchange.method;
      // Attributes only once the sampler said yes: most requests are not sampled, and an
      // attribute given to startSpan is validated and copied whatever the decision.
      const server = tracer.startSpan(method, { kind: SpanKind.SERVER }, parentOf(exchange, followsParent));
      if (server.isRecording()) server.setAttribute(ATTR_HTTP_REQUEST_METHOD, method);
      exchange.spans = { server, client: undefined };
      const context = server.spanContext();
      exchange.traceId = context.traceId;
      exchange.spanId = context.spanId;
    },

    startClient(exchange) {
      const spans = exchange.spans;
      if (spans === undefined) return;
      const parent = spans.server.spanContext();
      if ((parent.traceFlags & SAMPLED) === 0) {
        // Every sampler samplerOf() builds leaves a child of an unsampled span unsampled (parent
        // based: by its rule; a ratio: by the trace id they share; always_off: always), so the
        // SDK would make a span that records nothing: the backend needs only its new id.
        exchange.req.headers.traceparent = traceparentOf(
          parent.traceId,
          ids.generateSpanId(),
          parent.traceFlags,
        );
        return;
      }
      const method = exchange.method;
      const client = tracer.startSpan(
        method,
        { kind: SpanKind.CLIENT },
        trace.setSpan(ROOT_CONTEXT, spans.server),
      );
      // The URL's redaction is a scan of the target: paid only for a span that is exported.
      if (client.isRecording()) {
        client.setAttributes({
          [ATTR_HTTP_REQUEST_METHOD]: method,
          [ATTR_SERVER_ADDRESS]: upstream.address,
          [ATTR_SERVER_PORT]: upstream.port,
          [ATTR_URL_FULL]: `${upstream.origin}${upstream.basePath}${loggedPath(exchange.req.url ?? "", exchange)}`,
        });
      }
      spans.client = client;
      // The backend's parent is the gateway's client span; the client's tracestate goes on as it was.
      const context = client.spanContext();
      exchange.req.headers.traceparent = traceparentOf(context.traceId, context.spanId, context.traceFlags);
    },

    exemplarOf(exchange) {
      const server = exchange.spans?.server;
      return server !== undefined && (server.spanContext().traceFlags & SAMPLED) !== 0
        ? exchange.traceId
        : undefined;
    },

    end(exchange, status, loggedTarget) {
      const spans = exchange.spans;
      if (spans === undefined) return;
      const { server, client } = spans;
      // An unsampled span keeps nothing: its facts are not gathered, and end() is all it needs.
      if (client?.isRecording()) {
        const fault = exchange.facts.upstreamFault;
        if (exchange.upstreamStatus !== 0)
          client.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, exchange.upstreamStatus);
        if (fault !== undefined || exchange.upstreamStatus >= 500) {
          client.setAttribute(
            ATTR_ERROR_TYPE,
            fault !== undefined ? String(fault) : String(exchange.upstreamStatus),
          );
          client.setStatus({ code: SpanStatusCode.ERROR });
        }
        client.end(exchange.upstreamEndedAt !== 0 ? exchange.upstreamEndedAt : undefined);
      }
      if (!server.isRecording()) return;
      server.setAttributes(serverAttributes(exchange, status, loggedTarget));
      const route =
        exchange.operation && exchange.version
          ? exchange.version.api.basePath + exchange.operation.path
          : undefined;
      if (route !== undefined) server.updateName(`${exchange.method} ${route}`);
      if (status >= 500) server.setStatus({ code: SpanStatusCode.ERROR });
      server.end();
    },

    async shutdown(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
        timer.unref();
      });
      await Promise.race([provider.shutdown().catch(() => {}), late]);
      clearTimeout(timer);
    },
  };
}

function serverAttributes(exchange: CoreExchange, status: number, logged: string): Attributes {
  const query = logged.indexOf("?");
  const attributes: Attributes = {
    [ATTR_URL_PATH]: query === -1 ? logged : logged.slice(0, query),
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: status,
    [ATTR_CLIENT_ADDRESS]: exchange.clientAddress,
  };
  if (query !== -1) attributes[ATTR_URL_QUERY] = logged.slice(query + 1);
  const host = exchange.headers.host;
  if (host !== undefined) attributes[ATTR_SERVER_ADDRESS] = cut(exchange.redact(hostOf(host)));
  const { operation, rejection } = exchange;
  if (operation !== undefined) {
    if (exchange.version !== undefined)
      attributes[ATTR_HTTP_ROUTE] = exchange.version.api.basePath + operation.path;
    attributes[OPERATION_ID] = operation.id;
    if (operation.deprecated) attributes[DEPRECATED] = true;
  }
  if (exchange.consumer !== undefined) attributes[CONSUMER] = exchange.consumer;
  if (rejection !== undefined) {
    attributes[REFUSAL_CODE] = rejection.code;
    attributes[REFUSAL_REASON] = rejection.reason;
  }
  if (status >= 500) attributes[ATTR_ERROR_TYPE] = rejection?.code ?? String(status);
  // The policies' notes, as the access line has them (the limit applied, the contract's verdict,
  // the days to a deprecated operation's sunset).
  for (const name in exchange.notes) {
    const value = exchange.notes[name] as string | number | boolean;
    attributes[NOTE_PREFIX + attributeNameOf(name)] = typeof value === "string" ? cut(value) : value;
  }
  for (const name in exchange.facts) {
    const value = exchange.facts[name] as string | number | boolean;
    attributes[FACT_PREFIX + attributeNameOf(name)] = typeof value === "string" ? cut(value) : value;
  }
  return attributes;
}

// The client's valid traceparent (request-judge.ts judged it), as the remote parent.
// followsParent: the sampler samples a span exactly when its parent is sampled (parentbased_*).
function parentOf(exchange: CoreExchange, followsParent: boolean) {
  const header = exchange.req.headers.traceparent;
  if (exchange.traceId === undefined || exchange.spanId === undefined || typeof header !== "string") {
    return ROOT_CONTEXT;
  }
  const state = exchange.req.headers.tracestate;
  const traceFlags = Number.parseInt(header.slice(53, 55), 16) & 0xff;
  // The span carries it to the collector: a key a client put in it goes no further than the
  // backend. Redacted and parsed only for a span that may be exported: under an unsampled parent
  // a parent-based sampler exports nothing, and the backend gets the client's header as it was.
  const exported = !followsParent || (traceFlags & SAMPLED) !== 0;
  const parent: SpanContext = {
    traceId: exchange.traceId,
    spanId: exchange.spanId,
    traceFlags,
    isRemote: true,
    ...(typeof state === "string" && exported
      ? { traceState: createTraceState(exchange.redact(state)) }
      : {}),
  };
  return trace.setSpanContext(ROOT_CONTEXT, parent);
}

function traceparentOf(traceId: string, spanId: string, traceFlags: number): string {
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

function samplerOf(setting: SamplerSetting): Sampler {
  switch (setting.kind) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return new TraceIdRatioBasedSampler(setting.ratio);
    case "parentbased":
      return new ParentBasedSampler({ root: samplerOf(setting.root) });
  }
}

function upstreamFacts(url: string) {
  if (url === "") return NO_UPSTREAM;
  const parsed = new URL(url);
  const port = parsed.port !== "" ? Number(parsed.port) : parsed.protocol === "https:" ? 443 : 80;
  return {
    origin: parsed.origin,
    address: parsed.hostname,
    port,
    basePath: withoutTrailingSlashes(parsed.pathname),
  };
}

/** Decision mode's: no backend call, so no client span reads it. */
const NO_UPSTREAM = { origin: "", address: "", port: 0, basePath: "" };

function hostOf(host: string): string {
  // [v6]:port, name:port, name
  if (host.startsWith("[")) return host.slice(0, host.indexOf("]") + 1) || host;
  const colon = host.indexOf(":");
  return colon === -1 ? host : host.slice(0, colon);
}

function cut(text: string): string {
  return text.length > MAX_ATTRIBUTE_CHARS ? `${text.slice(0, MAX_ATTRIBUTE_CHARS)}…` : text;
}

// OpenTelemetry's SDK, started only when an OTLP endpoint is configured: the standard variables
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, and OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER, OTEL_BSP_*) are
// read by the SDK itself. Without an endpoint nothing of the SDK is loaded: the spans Steward
// starts (log/trace.ts) are the API's no-op ones.
import type { Logger } from "pino";
import { hintedIds, markTracing } from "../log/trace.js";
import { packageVersion } from "../package-root.js";

export interface Tracing {
  /** Sends what is buffered (Steward's close waits for it). */
  flush(): Promise<void>;
}

type Env = Record<string, string | undefined>;

/** Whether the environment asks for traces: an OTLP endpoint, and the SDK or trace export not turned off. */
export function tracingWanted(env: Env = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "otlp").split(",").map((e) => e.trim().toLowerCase());
  if (!exporters.includes("otlp")) return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

/** The exporter sends OTLP as JSON over HTTP; a collector takes it at the same port as protobuf. */
const PROTOCOL = "http/json";

let started: Promise<Tracing> | undefined;

/**
 * Starts and registers the SDK once per process (several services in one process, as in tests,
 * share it), when the environment asks for traces; undefined otherwise.
 */
export async function startTracing(logger: Logger, env: Env = process.env): Promise<Tracing | undefined> {
  if (!tracingWanted(env)) return undefined;
  started ??= (async () => {
    const [{ NodeTracerProvider }, { BatchSpanProcessor, RandomIdGenerator }, { OTLPTraceExporter }, resources] =
      await Promise.all([
        import("@opentelemetry/sdk-trace-node"),
        import("@opentelemetry/sdk-trace-base"),
        import("@opentelemetry/exporter-trace-otlp-http"),
        import("@opentelemetry/resources"),
      ]);
    const asked = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
    if (asked && asked !== PROTOCOL) {
      logger.warn({ asked, sent: PROTOCOL }, "OTLP protocol not supported; traces are exported as http/json");
    }
    const random = new RandomIdGenerator();
    const provider = new NodeTracerProvider({
      // Steward's name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name it otherwise.
      resource: resources
        .defaultResource()
        .merge(resources.resourceFromAttributes({ "service.name": "steward", "service.version": packageVersion() }))
        .merge(resources.detectResources({ detectors: [resources.envDetector] })),
      // A delivery's receipt span takes the delivery's ids (log/trace.ts); every other span random ones.
      idGenerator: {
        generateTraceId: () => hintedIds()?.traceId ?? random.generateTraceId(),
        generateSpanId: () => hintedIds()?.spanId ?? random.generateSpanId(),
      },
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    provider.register();
    markTracing();
    logger.info("traces exported over OTLP");
    return { flush: () => provider.forceFlush() };
  })();
  return started;
}

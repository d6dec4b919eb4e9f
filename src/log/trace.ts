// Steward's side of OpenTelemetry tracing: the tracer every part uses, the ids of a delivery's
// trace, and the trace fields of log lines. Only @opentelemetry/api is used here: until the SDK
// is started (ops/tracing.ts, when an OTLP endpoint is configured) every tracer is the API's
// no-op one, spans record nothing and log lines get no trace fields.
//
// A delivery is traced in two parts that never share a process's memory: its receipt (intake) and
// its runs (engine), possibly in another replica after a restart. Both take the trace's ids from
// the delivery id, so the runs join the receipt's trace without the store holding anything.
import { createHash } from "node:crypto";
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanOptions,
} from "@opentelemetry/api";

/** The instrumentation scope of every span Steward makes. */
export const TRACER_NAME = "steward";

/** Delegates to the registered provider once there is one; the API's no-op tracer before. */
export const tracer = trace.getTracer(TRACER_NAME);

/** The root span of a delivery's trace: its receipt. */
export const RECEIPT_SPAN = "webhook receive";

export interface TraceIds {
  traceId: string;
  spanId: string;
}

/** The trace of a delivery and its receipt span: derived from the delivery id, the same in every process. */
export function deliveryTraceIds(deliveryId: string): TraceIds {
  const hex = createHash("sha256").update(`steward delivery trace\0${deliveryId}`).digest("hex");
  return { traceId: hex.slice(0, 32), spanId: hex.slice(32, 48) };
}

let hinted: TraceIds | undefined;
let exporting = false;

/** Whether traces are exported (the console shows a delivery's trace id then). */
export function tracingExported(): boolean {
  return exporting;
}

/** Called once the SDK is registered (ops/tracing.ts): from then on runs derive their trace's context. */
export function markTracing(): void {
  exporting = true;
}

/**
 * The ids the SDK's id generator (ops/tracing.ts) hands out next: a delivery's, while its receipt
 * span is started, else none (random ones). Span creation is synchronous, so the hint is set and
 * cleared around exactly one span.
 */
export function hintedIds(): TraceIds | undefined {
  return hinted;
}

function startWithIds(ids: TraceIds, name: string, options: SpanOptions): Span {
  hinted = ids;
  try {
    return tracer.startSpan(name, { ...options, root: true }, ROOT_CONTEXT);
  } finally {
    hinted = undefined;
  }
}

/** Starts the receipt span of a delivery: the root of its trace, with the delivery's ids. */
export function startReceiptSpan(deliveryId: string, options: SpanOptions): Span {
  if (!exporting) return tracer.startSpan(RECEIPT_SPAN, options);
  return startWithIds(deliveryTraceIds(deliveryId), RECEIPT_SPAN, { kind: SpanKind.SERVER, ...options });
}

/**
 * The context a run of the delivery starts its spans in: a child of the receipt span, sampled as
 * the receipt was. Samplers decide on the trace id, so the same root decision is asked for again
 * with a span that is never ended (never exported).
 */
export function deliveryRunContext(deliveryId: string): Context {
  if (!exporting) return ROOT_CONTEXT;
  const ids = deliveryTraceIds(deliveryId);
  const sampled =
    (startWithIds(ids, RECEIPT_SPAN, { kind: SpanKind.SERVER }).spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;
  return trace.setSpanContext(ROOT_CONTEXT, {
    ...ids,
    traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  });
}

/** `trace_id` and `span_id` of the span active where a line is logged (the pino mixin), else nothing. */
export function traceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId, traceFlags } = span.spanContext();
  if ((traceFlags & TraceFlags.SAMPLED) === 0) return {};
  return { trace_id: traceId, span_id: spanId };
}

/**
 * Runs `fn` in a new active span: ended when `fn` settles, its status an error when `fn` throws
 * (the error's message is not kept: it may quote anything; the error's type is).
 */
export async function inSpan<T>(
  name: string,
  options: { attributes?: Attributes; kind?: SpanKind; parent?: Context },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const run = (span: Span) =>
    fn(span).then(
      (value) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute("error.type", error instanceof Error ? error.name : typeof error);
        span.end();
        throw error;
      },
    );
  const spanOptions: SpanOptions = {
    ...(options.attributes ? { attributes: options.attributes } : {}),
    ...(options.kind === undefined ? {} : { kind: options.kind }),
  };
  return options.parent
    ? tracer.startActiveSpan(name, spanOptions, options.parent, run)
    : tracer.startActiveSpan(name, spanOptions, run);
}

/**
 * Spans and request metrics of the delivery handler, through
 * `@opentelemetry/api`. Without a registered SDK (or `OTEL_DENO=true` in
 * Deno) every call is a cheap no-op. Attributes carry the route template,
 * never the requested path.
 *
 * @module
 */

import {
  type Attributes,
  type Counter,
  createNoopMeter,
  type Histogram,
  metrics,
  type Span,
  SpanStatusCode,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import type { DeliveryRoute } from "./types.ts";

/** The instrumentation scope name. */
export const INSTRUMENTATION_SCOPE = "@cordon/cordon/delivery";
/** The span of one delivery request. */
export const SPAN_NAME = "cordon.delivery.request";
/** The counter of delivery requests. */
export const COUNTER_NAME = "cordon.delivery.requests";
/** The histogram of delivery request durations, in milliseconds. */
export const HISTOGRAM_NAME = "cordon.delivery.duration";

/** The route templates a request can match. */
export type RouteName = DeliveryRoute;

/** Records one request. */
export interface RequestRecord {
  /** The route template matched. */
  route: RouteName;
  /** The answered status. */
  status: number;
  /** The stable error code, when the answer is an error. */
  code: string | undefined;
  /** The request's method, limited to known methods. */
  method: string;
  /** How long the handler took, in milliseconds (`NaN` when not timed). */
  durationMs: number;
}

/**
 * The tracer and instruments of one handler. The tracer follows a provider
 * registered later (the API proxies it); the instruments are bound when the
 * handler is created, as the metrics API requires, so without a meter
 * provider then, metrics cost nothing per request.
 */
export class DeliveryTelemetry {
  /** Whether a meter provider was registered when the handler was made. */
  readonly metered: boolean;
  #tracer: Tracer;
  #counter: Counter;
  #histogram: Histogram;
  #routes: Readonly<Record<RouteName, string>>;

  /**
   * Gets the tracer and creates the instruments.
   *
   * @param prefix The handler's route prefix, used in `http.route`.
   */
  constructor(prefix: string) {
    this.#tracer = trace.getTracer(INSTRUMENTATION_SCOPE);
    const meter = metrics.getMeter(INSTRUMENTATION_SCOPE);
    this.metered = meter !== createNoopMeter();
    this.#counter = meter.createCounter(COUNTER_NAME, {
      description: "Delivery requests, by route, method, status and code",
    });
    this.#histogram = meter.createHistogram(HISTOGRAM_NAME, {
      description: "Time to answer a delivery request",
      unit: "ms",
    });
    this.#routes = Object.freeze({
      listing: prefix,
      module: `${prefix}/:id`,
      none: "",
    });
  }

  /**
   * Starts the span of one request.
   *
   * @returns The span; {@linkcode DeliveryTelemetry.end} ends it.
   */
  start(): Span {
    return this.#tracer.startSpan(SPAN_NAME);
  }

  /**
   * Ends a request's span and records its metrics.
   *
   * @param span The span {@linkcode DeliveryTelemetry.start} gave.
   * @param record What happened.
   * @param error An exception the handler caught. Only its name and code
   * reach the span: messages may name server-side paths.
   */
  end(span: Span, record: RequestRecord, error?: unknown): void {
    const recording = span.isRecording();
    if (!recording && !this.metered) {
      span.end();
      return;
    }
    const attributes: Attributes = {
      "http.request.method": record.method,
      "http.response.status_code": record.status,
      "cordon.route": record.route,
    };
    const route = this.#routes[record.route];
    if (route !== "") attributes["http.route"] = route;
    if (record.code !== undefined) {
      attributes["cordon.error.code"] = record.code;
    }
    if (recording) {
      span.setAttributes(attributes);
      if (error !== undefined) span.recordException(describe(error));
      if (record.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
    if (this.metered) {
      this.#counter.add(1, attributes);
      this.#histogram.record(record.durationMs, attributes);
    }
  }
}

function describe(error: unknown): { name: string; message: string } {
  const name = error instanceof Error ? error.name : typeof error;
  const code = (error as { code?: unknown } | null)?.code;
  return { name, message: typeof code === "string" ? code : name };
}

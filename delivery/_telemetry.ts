/**
 * The server span and request metrics of the delivery handler, through
 * `@opentelemetry/api` (protocol/server_telemetry.ts gives the span and
 * the standard duration). Without a registered SDK (or `OTEL_DENO=true` in
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
} from "@opentelemetry/api";
import {
  type ServerRequest,
  ServerTelemetry,
  telemetryMethod,
} from "../protocol/server_telemetry.ts";
import type { DeliveryRoute } from "./types.ts";

/** The instrumentation scope name. */
export const INSTRUMENTATION_SCOPE = "@cordon/cordon/delivery";
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
  /** The request's method, as sent. */
  method: string;
  /** How long the handler took, in milliseconds (`NaN` when not timed). */
  durationMs: number;
}

/**
 * The server telemetry and the delivery metrics of one handler. The
 * instruments are bound when the handler is created, as the metrics API
 * requires, so without a meter provider then, metrics cost nothing per
 * request.
 */
export class DeliveryTelemetry {
  /** Whether a meter provider was registered when the handler was made. */
  readonly metered: boolean;
  #server: ServerTelemetry;
  #counter: Counter;
  #histogram: Histogram;
  #routes: Readonly<Record<RouteName, string>>;

  /**
   * Gets the tracer and creates the instruments.
   *
   * @param prefix The handler's route prefix, used in `http.route`.
   */
  constructor(prefix: string) {
    this.#server = new ServerTelemetry(INSTRUMENTATION_SCOPE);
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
      listing: prefix === "" ? "/" : prefix,
      module: `${prefix}/:id`,
      none: "",
    });
  }

  /**
   * Starts the server span of one request, or takes the one active.
   *
   * @param request The request.
   * @returns The request's span; {@linkcode DeliveryTelemetry.end} ends it.
   */
  start(request: Request): ServerRequest {
    return this.#server.start(request);
  }

  /**
   * Calls `fn` with the request's span active.
   *
   * @param request What {@linkcode DeliveryTelemetry.start} gave.
   * @param fn The handler's work.
   * @returns What `fn` returns.
   */
  within<T>(request: ServerRequest, fn: () => T): T {
    return this.#server.within(request, fn);
  }

  /**
   * Ends a request's span and records its metrics.
   *
   * @param request What {@linkcode DeliveryTelemetry.start} gave.
   * @param record What happened.
   * @param error An exception the handler caught. Only its name and code
   * reach the span: messages may name server-side paths.
   */
  end(request: ServerRequest, record: RequestRecord, error?: unknown): void {
    const template = this.#routes[record.route];
    const route = template === "" ? undefined : template;
    const own: Attributes = { "cordon.route": record.route };
    if (record.code !== undefined) own["cordon.error.code"] = record.code;
    this.#server.end(request, {
      status: record.status,
      route,
      code: record.code,
      durationMs: record.durationMs,
      attributes: own,
      error,
    });
    if (!this.metered) return;
    const attributes: Attributes = {
      "http.request.method": telemetryMethod(record.method),
      "http.response.status_code": record.status,
      ...own,
    };
    if (route !== undefined) attributes["http.route"] = route;
    this.#counter.add(1, attributes);
    this.#histogram.record(record.durationMs, attributes);
  }
}

// This module is browser compatible.

/**
 * The HTTP server span and request duration of a web-standard handler (the
 * delivery handler, the plugin host's `fetch`), as the OpenTelemetry HTTP
 * semantic conventions give them, through `@opentelemetry/api`. Without a
 * registered SDK every call is a cheap no-op.
 *
 * One request has one server span. When a recording span is already
 * active as the handler is called, it is the request's server span, made by whoever
 * served the request (`Deno.serve` with `OTEL_DENO=true`, a Node HTTP
 * instrumentation): the handler does not start a second one, it names that
 * span after the matched route and adds `http.route` and its own
 * attributes, and leaves its status, its end and the standard duration
 * metric to its owner. Otherwise the handler starts the server span itself,
 * continuing the caller's trace from the request's `traceparent` through
 * the registered propagator, and records `http.server.request.duration`.
 *
 * Neither the path nor the query reaches telemetry: a path may name a
 * module or a plugin's resource, a query may carry a token. The route
 * template stands for both.
 *
 * @module
 */

import {
  type Attributes,
  context,
  createNoopMeter,
  type Histogram,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  metrics,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import { nothingRegistered } from "./run_telemetry.ts";

/** The standard histogram of server request durations, in seconds. */
export const SERVER_DURATION_NAME = "http.server.request.duration";

/** The bucket boundaries the HTTP semantic conventions advise, in seconds. */
const DURATION_BUCKETS_S: readonly number[] = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.075,
  0.1,
  0.25,
  0.5,
  0.75,
  1,
  2.5,
  5,
  7.5,
  10,
];

/** The methods the conventions name; any other is recorded as `_OTHER`. */
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  "CONNECT",
  "DELETE",
  "GET",
  "HEAD",
  "OPTIONS",
  "PATCH",
  "POST",
  "PUT",
  "QUERY",
  "TRACE",
]);

/**
 * A request method as telemetry records it: one the conventions name, or
 * `_OTHER` (a method is any token a client sends, so it is not a bounded
 * set).
 *
 * @param method The request's method.
 * @returns The method, or `_OTHER`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { telemetryMethod } from "./server_telemetry.ts";
 *
 * assert.equal(telemetryMethod("GET"), "GET");
 * assert.equal(telemetryMethod("BREW"), "_OTHER");
 * ```
 */
export function telemetryMethod(method: string): string {
  return KNOWN_METHODS.has(method) ? method : "_OTHER";
}

/**
 * A request's span while no SDK is registered: a span that records
 * nothing, which the handler neither ends nor times. Skipping the no-op
 * span and the propagator saves about a quarter of a microsecond a
 * request, against a handler that answers in about 10.
 */
const UNTRACED: ServerRequest = Object.freeze({
  span: trace.wrapSpanContext(INVALID_SPAN_CONTEXT),
  owned: false,
  method: "",
  scheme: "",
});

/** Reads a request's headers for the propagator. */
const HEADER_GETTER: TextMapGetter<Headers> = {
  keys: (headers) => [...headers.keys()],
  get: (headers, key) => headers.get(key) ?? undefined,
};

/** One request's span, from {@linkcode ServerTelemetry.start}. */
export interface ServerRequest {
  /** The request's span: the handler's own, or the one it found active. */
  readonly span: Span;
  /** Whether the handler started the span, so ends it and times it. */
  readonly owned: boolean;
  /** The method as recorded ({@linkcode telemetryMethod}). */
  readonly method: string;
  /** The URL's scheme, `http` or `https`. */
  readonly scheme: string;
}

/** How one request ended, for {@linkcode ServerTelemetry.end}. */
export interface ServerOutcome {
  /** The answered status. */
  status: number;
  /** The route template matched (`/api/sandbox-modules/:id`), if any. */
  route?: string;
  /** The stable error code the handler answered, if any. */
  code?: string;
  /** How long the handler took, in milliseconds (`NaN` when not timed). */
  durationMs: number;
  /** The handler's own attributes, added to the span. */
  attributes?: Attributes;
  /** An exception the handler caught: only its name reaches the span. */
  error?: unknown;
}

/**
 * The server telemetry of one handler. The tracer follows a provider
 * registered later (the API proxies it); the histogram is bound when the
 * handler is made, as the metrics API requires, so without a meter
 * provider then, metrics cost nothing per request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ServerTelemetry } from "./server_telemetry.ts";
 *
 * const telemetry = new ServerTelemetry("example");
 * const request = telemetry.start(new Request("http://localhost/a/1"));
 * telemetry.end(request, { status: 200, route: "/a/:n", durationMs: 1 });
 * // With no SDK registered there is no span of the handler's own to end.
 * assert.equal(request.owned, false);
 * ```
 */
export class ServerTelemetry {
  /** Whether a meter provider was registered when the handler was made. */
  readonly metered: boolean;
  #tracer: Tracer;
  #duration: Histogram;

  /**
   * Gets the tracer and creates the histogram.
   *
   * @param scope The instrumentation scope's name.
   */
  constructor(scope: string) {
    this.#tracer = trace.getTracer(scope);
    const meter = metrics.getMeter(scope);
    this.metered = meter !== createNoopMeter();
    this.#duration = meter.createHistogram(SERVER_DURATION_NAME, {
      description: "Duration of HTTP server requests",
      unit: "s",
      advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_S] },
    });
  }

  /**
   * Starts a request's server span, or takes the one already active.
   *
   * @param request The request as the handler got it.
   * @returns The request's span; {@linkcode ServerTelemetry.end} ends it.
   */
  start(request: Request): ServerRequest {
    if (nothingRegistered()) return UNTRACED;
    const method = telemetryMethod(request.method);
    const scheme = request.url.startsWith("https:") ? "https" : "http";
    const active = trace.getActiveSpan();
    // One that records nothing, such as one its owner ended but left
    // active, is no server span to name after the route.
    if (active?.isRecording()) {
      return { span: active, owned: false, method, scheme };
    }
    const parent = propagation.extract(
      context.active(),
      request.headers,
      HEADER_GETTER,
    );
    const span = this.#tracer.startSpan(spanName(method), {
      kind: SpanKind.SERVER,
      attributes: { "http.request.method": method, "url.scheme": scheme },
    }, parent);
    return { span, owned: true, method, scheme };
  }

  /**
   * Calls `fn` with the request's span active, so the spans started in it
   * (a run's, a catalog's) are its children.
   *
   * @param request What {@linkcode ServerTelemetry.start} gave.
   * @param fn The handler's work.
   * @returns What `fn` returns.
   */
  within<T>(request: ServerRequest, fn: () => T): T {
    // A span found active is active already; a no-op span with no parent
    // has nothing to hand on.
    if (!request.owned || !isSpanContextValid(request.span.spanContext())) {
      return fn();
    }
    return context.with(trace.setSpan(context.active(), request.span), fn);
  }

  /**
   * Records how a request ended: names the span after its route and ends
   * it when the handler started it, and records the duration.
   *
   * @param request What {@linkcode ServerTelemetry.start} gave.
   * @param outcome How the request ended.
   */
  end(request: ServerRequest, outcome: ServerOutcome): void {
    const { span, owned } = request;
    const recording = span.isRecording();
    const timed = owned && this.metered;
    if (!recording && !timed) {
      if (owned) span.end();
      return;
    }
    const attributes = standardAttributes(request, outcome);
    if (recording) {
      if (owned || outcome.route !== undefined) {
        span.updateName(spanName(request.method, outcome.route));
      }
      if (owned) {
        span.setAttributes(attributes);
        if (outcome.error !== undefined) {
          span.recordException(exceptionOf(outcome.error));
        }
        if (outcome.status >= 500) {
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
      } else if (outcome.route !== undefined) {
        // The owner set the rest; the route is what only the handler knows.
        span.setAttribute("http.route", outcome.route);
      }
      if (outcome.attributes !== undefined) {
        span.setAttributes(outcome.attributes);
      }
    }
    if (!owned) return;
    span.end();
    if (timed) this.#duration.record(outcome.durationMs / 1000, attributes);
  }
}

/** `{method} {route}`, `{method}` without a route, `HTTP` for `_OTHER`. */
function spanName(method: string, route?: string): string {
  const verb = method === "_OTHER" ? "HTTP" : method;
  return route === undefined ? verb : `${verb} ${route}`;
}

/** The conventions' attributes of a finished request. */
function standardAttributes(
  request: ServerRequest,
  outcome: ServerOutcome,
): Attributes {
  const attributes: Attributes = {
    "http.request.method": request.method,
    "url.scheme": request.scheme,
    "http.response.status_code": outcome.status,
  };
  if (outcome.route !== undefined) attributes["http.route"] = outcome.route;
  // A server's 4xx is the client's mistake, not an error of the server.
  if (outcome.status >= 500) {
    attributes["error.type"] = outcome.code ?? String(outcome.status);
  }
  return attributes;
}

/** An exception as the span records it: its name, and its code if any. */
function exceptionOf(error: unknown): { name: string; message: string } {
  const name = error instanceof Error ? error.name : typeof error;
  const code = (error as { code?: unknown } | null)?.code;
  return { name, message: typeof code === "string" ? code : name };
}

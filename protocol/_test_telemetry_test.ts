/**
 * A recording OpenTelemetry tracer and meter for the telemetry tests of
 * every module: `recordTelemetry()` registers them as the global providers,
 * with a context manager that follows async calls and a `traceparent`
 * propagator, and keeps what the code under test records.
 *
 * @module
 */

import { AsyncLocalStorage } from "node:async_hooks";
import {
  type Attributes,
  type AttributeValue,
  type Context,
  context,
  type ContextManager,
  type Counter,
  createNoopMeter,
  type Histogram,
  type Meter,
  metrics,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  type SpanKind,
  type SpanOptions,
  type SpanStatus,
  type TextMapPropagator,
  trace,
  type Tracer,
} from "@opentelemetry/api";

/** A span as the code under test left it. */
export interface RecordedSpan {
  scope: string;
  /** The name it ended with (after any `updateName`). */
  name: string;
  kind?: SpanKind;
  /** The span's own context. */
  context: SpanContext;
  /** The parent's context, when it had one. */
  parent?: SpanContext;
  attributes: Attributes;
  status?: SpanStatus;
  exceptions: unknown[];
  ended: boolean;
}

/** `length` random bytes as lowercase hex. */
function randomHex(length: number): string {
  return [...crypto.getRandomValues(new Uint8Array(length))]
    .map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** A context manager that follows async calls, as an SDK's does. */
function asyncContextManager(): ContextManager {
  const storage = new AsyncLocalStorage<Context>();
  const manager: ContextManager = {
    active: () => storage.getStore() ?? ROOT_CONTEXT,
    with: (ctx, fn, thisArg, ...args) =>
      storage.run(ctx, () => fn.apply(thisArg, args)),
    bind: (ctx, target) =>
      typeof target === "function"
        ? ((...args: unknown[]) =>
          storage.run(ctx, () => target(...args))) as typeof target
        : target,
    enable: () => manager,
    disable: () => manager,
  };
  return manager;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A W3C `traceparent` propagator (no `tracestate`). */
const traceparentPropagator: TextMapPropagator = {
  inject(ctx, carrier, setter) {
    const span = trace.getSpanContext(ctx);
    if (span === undefined) return;
    const flags = span.traceFlags.toString(16).padStart(2, "0");
    setter.set(
      carrier,
      "traceparent",
      `00-${span.traceId}-${span.spanId}-${flags}`,
    );
  },
  extract(ctx, carrier, getter) {
    const header = getter.get(carrier, "traceparent");
    const match = TRACEPARENT.exec(typeof header === "string" ? header : "");
    if (match === null) return ctx;
    return trace.setSpanContext(ctx, {
      traceId: match[1]!,
      spanId: match[2]!,
      traceFlags: parseInt(match[3]!, 16),
      isRemote: true,
    });
  },
  fields: () => ["traceparent"],
};

/** One counter addition or histogram record. */
export interface RecordedPoint {
  instrument: string;
  value: number;
  attributes: Attributes;
}

/** What was recorded; disposing it unregisters the global providers. */
export interface TelemetryRecording extends Disposable {
  readonly spans: RecordedSpan[];
  readonly points: RecordedPoint[];
}

function recordingSpan(record: RecordedSpan): Span {
  const span: Span = {
    spanContext: () => record.context,
    setAttribute(key: string, value: AttributeValue) {
      record.attributes[key] = value;
      return span;
    },
    setAttributes(attributes: Attributes) {
      Object.assign(record.attributes, attributes);
      return span;
    },
    addEvent: () => span,
    setStatus(status: SpanStatus) {
      record.status = status;
      return span;
    },
    updateName(name: string) {
      record.name = name;
      return span;
    },
    end() {
      record.ended = true;
    },
    isRecording: () => !record.ended,
    recordException(exception: unknown) {
      record.exceptions.push(exception);
    },
  };
  return span;
}

function recordingTracer(scope: string, spans: RecordedSpan[]): Tracer {
  const tracer = {
    startSpan(name: string, options?: SpanOptions, ctx?: Context): Span {
      const parent = trace.getSpanContext(ctx ?? context.active());
      const record: RecordedSpan = {
        scope,
        name,
        kind: options?.kind,
        context: {
          traceId: parent?.traceId ?? randomHex(16),
          spanId: randomHex(8),
          traceFlags: 1,
        },
        attributes: { ...options?.attributes },
        exceptions: [],
        ended: false,
      };
      if (parent !== undefined) record.parent = parent;
      spans.push(record);
      return recordingSpan(record);
    },
    startActiveSpan(): never {
      throw new Error("Not used by cordon");
    },
  };
  return tracer as Tracer;
}

function recordingMeter(points: RecordedPoint[]): Meter {
  // Inherit the no-op instruments; record counters and histograms.
  const meter: Meter = Object.create(createNoopMeter());
  meter.createCounter = (instrument: string): Counter => ({
    add: (value: number, attributes: Attributes = {}) => {
      points.push({ instrument, value, attributes });
    },
  });
  meter.createHistogram = (instrument: string): Histogram => ({
    record: (value: number, attributes: Attributes = {}) => {
      points.push({ instrument, value, attributes });
    },
  });
  return meter;
}

/**
 * Registers a recording tracer and meter as the global providers, with an
 * async context manager and a `traceparent` propagator.
 *
 * @throws {Error} When another provider is already registered.
 */
export function recordTelemetry(): TelemetryRecording {
  const spans: RecordedSpan[] = [];
  const points: RecordedPoint[] = [];
  const tracerSet = trace.setGlobalTracerProvider({
    getTracer: (scope: string) => recordingTracer(scope, spans),
  });
  const meterSet = metrics.setGlobalMeterProvider({
    getMeter: () => recordingMeter(points),
  });
  const contextSet = context.setGlobalContextManager(asyncContextManager());
  const propagatorSet = propagation.setGlobalPropagator(traceparentPropagator);
  if (!tracerSet || !meterSet || !contextSet || !propagatorSet) {
    disableAll();
    throw new Error("Another telemetry provider was registered already");
  }
  return {
    spans,
    points,
    [Symbol.dispose]: disableAll,
  };
}

function disableAll(): void {
  trace.disable();
  metrics.disable();
  context.disable();
  propagation.disable();
}

/**
 * A recording OpenTelemetry tracer and meter for the telemetry tests of
 * every module: `recordTelemetry()` registers them as the global providers
 * and keeps what the code under test records.
 *
 * @module
 */

import {
  type Attributes,
  type AttributeValue,
  type Counter,
  createNoopMeter,
  type Histogram,
  INVALID_SPAN_CONTEXT,
  type Meter,
  metrics,
  type Span,
  type SpanOptions,
  type SpanStatus,
  trace,
  type Tracer,
} from "@opentelemetry/api";

/** A span as the code under test left it. */
export interface RecordedSpan {
  scope: string;
  name: string;
  attributes: Attributes;
  status?: SpanStatus;
  exceptions: unknown[];
  ended: boolean;
}

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
    spanContext: () => INVALID_SPAN_CONTEXT,
    setAttribute(key: string, value: AttributeValue) {
      record.attributes[key] = value;
      return span;
    },
    setAttributes(attributes: Attributes) {
      Object.assign(record.attributes, attributes);
      return span;
    },
    addEvent: () => span,
    addLink: () => span,
    addLinks: () => span,
    setStatus(status: SpanStatus) {
      record.status = status;
      return span;
    },
    updateName: () => span,
    end() {
      record.ended = true;
    },
    isRecording: () => true,
    recordException(exception: unknown) {
      record.exceptions.push(exception);
    },
  };
  return span;
}

function recordingTracer(scope: string, spans: RecordedSpan[]): Tracer {
  const tracer = {
    startSpan(name: string, options?: SpanOptions): Span {
      const record: RecordedSpan = {
        scope,
        name,
        attributes: { ...options?.attributes },
        exceptions: [],
        ended: false,
      };
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
 * Registers a recording tracer and meter as the global providers.
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
  if (!tracerSet || !meterSet) {
    trace.disable();
    metrics.disable();
    throw new Error("Another telemetry provider was registered already");
  }
  return {
    spans,
    points,
    [Symbol.dispose]() {
      trace.disable();
      metrics.disable();
    },
  };
}

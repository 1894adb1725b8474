import assert from "node:assert/strict";
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
import {
  COUNTER_NAME,
  HISTOGRAM_NAME,
  INSTRUMENTATION_SCOPE,
  SPAN_NAME,
} from "./_telemetry.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";

interface RecordedSpan {
  scope: string;
  name: string;
  attributes: Attributes;
  status?: SpanStatus;
  ended: boolean;
}

const spans: RecordedSpan[] = [];
const points: { name: string; value: number; attributes: Attributes }[] = [];

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
    recordException: () => {},
  };
  return span;
}

function recordingTracer(scope: string): Tracer {
  const tracer = {
    startSpan(name: string, options?: SpanOptions): Span {
      const record: RecordedSpan = {
        scope,
        name,
        attributes: { ...options?.attributes },
        ended: false,
      };
      spans.push(record);
      return recordingSpan(record);
    },
    startActiveSpan(): never {
      throw new Error("not used");
    },
  };
  return tracer as Tracer;
}

function recordingMeter(): Meter {
  const noop = createNoopMeter();
  return {
    ...noop,
    createCounter(name: string): Counter {
      return {
        add(value: number, attributes: Attributes = {}) {
          points.push({ name, value, attributes });
        },
      };
    },
    createHistogram(name: string): Histogram {
      return {
        record(value: number, attributes: Attributes = {}) {
          points.push({ name, value, attributes });
        },
      };
    },
  } as Meter;
}

Deno.test("every run records a span, a counter and a duration, without code or context", async () => {
  const tracerSet = trace.setGlobalTracerProvider({
    getTracer: (scope: string) => recordingTracer(scope),
  });
  const meterSet = metrics.setGlobalMeterProvider({
    getMeter: () => recordingMeter(),
  });
  assert.ok(tracerSet && meterSet, "no other provider was registered");
  try {
    const secret = `context-secret-${crypto.randomUUID()}`;
    const source =
      `export default (context) => { throw new Error(context.s); };`;
    await using worker = createWorkerSandbox();
    await using process = createProcessSandbox();
    const results = [
      await worker.run("export default 1;"),
      await worker.run(source, { s: secret }),
      await process.run("for (;;) {}", null, { timeoutMs: 200 }),
    ];
    assert.deepEqual(results.map((result) => result.ok), [true, false, false]);

    const runs = spans.filter((span) => span.name === SPAN_NAME);
    assert.deepEqual(
      runs.map((span) => [
        span.scope,
        span.attributes["cordon.tier"],
        span.attributes["cordon.outcome"],
        span.ended,
      ]),
      [
        [INSTRUMENTATION_SCOPE, "worker", "ok", true],
        [INSTRUMENTATION_SCOPE, "worker", "GUEST_ERROR", true],
        [INSTRUMENTATION_SCOPE, "process", "TIMEOUT", true],
      ],
    );
    assert.equal(runs[1]!.status?.message, "GUEST_ERROR");
    const counted = points.filter((point) => point.name === COUNTER_NAME);
    assert.deepEqual(
      counted.map((point) => [point.value, point.attributes["cordon.outcome"]]),
      [[1, "ok"], [1, "GUEST_ERROR"], [1, "TIMEOUT"]],
    );
    const durations = points.filter((point) => point.name === HISTOGRAM_NAME);
    assert.equal(durations.length, 3);
    assert.deepEqual(
      durations.map((point) => point.value),
      results.map((result) => result.metrics.durationMs),
    );
    const recorded = JSON.stringify({ spans, points });
    assert.ok(
      !recorded.includes(secret),
      "the context never reaches telemetry",
    );
    assert.ok(!recorded.includes("throw new Error"), "nor does the code");
  } finally {
    trace.disable();
    metrics.disable();
  }
});

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
  type SpanStatus,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import { createDeliveryHandler } from "./handler.ts";
import {
  COUNTER_NAME,
  HISTOGRAM_NAME,
  INSTRUMENTATION_SCOPE,
  SPAN_NAME,
} from "./_telemetry.ts";

interface RecordedSpan {
  scope: string;
  name: string;
  attributes: Attributes;
  status?: SpanStatus;
  exceptions: unknown[];
  ended: boolean;
}

const spans: RecordedSpan[] = [];
const points: { instrument: string; value: number; attributes: Attributes }[] =
  [];

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

function recordingTracer(scope: string): Tracer {
  const tracer = {
    startSpan(name: string): Span {
      const record: RecordedSpan = {
        scope,
        name,
        attributes: {},
        exceptions: [],
        ended: false,
      };
      spans.push(record);
      return recordingSpan(record);
    },
    startActiveSpan(): never {
      throw new Error("Not used by the delivery handler");
    },
  };
  return tracer as Tracer;
}

function recordingMeter(): Meter {
  // Inherit the no-op instruments; record counters and histograms.
  const meter: Meter = Object.create(createNoopMeter());
  meter.createCounter = (name: string): Counter => ({
    add: (value: number, attributes: Attributes = {}) => {
      points.push({ instrument: name, value, attributes });
    },
  });
  meter.createHistogram = (name: string): Histogram => ({
    record: (value: number, attributes: Attributes = {}) => {
      points.push({ instrument: name, value, attributes });
    },
  });
  return meter;
}

const catalog: SandboxModuleCatalog = {
  resolveForExecution: () => ({
    statuses: [],
    packs: {},
    modules: {},
    installed: [],
  }),
  authorizeDelivery: (id) =>
    id === "boom"
      ? Promise.reject(new Error("Cannot open /srv/packs/math/index.js"))
      : Promise.resolve({
        ok: false,
        reason: "not-found",
        code: "MODULE_NOT_FOUND",
        message: "No module",
      }),
  summaries: () => [],
};

Deno.test("createDeliveryHandler() records one span and the request metrics per request, never the path", async () => {
  assert.ok(trace.setGlobalTracerProvider({ getTracer: recordingTracer }));
  assert.ok(metrics.setGlobalMeterProvider({ getMeter: recordingMeter }));
  try {
    const handle = createDeliveryHandler(catalog);
    const urls = [
      "http://localhost/api/sandbox-modules",
      "http://localhost/api/sandbox-modules/secret_name_1",
      "http://localhost/api/sandbox-modules/boom",
      "http://localhost/elsewhere/secret_dir",
    ];
    for (const url of urls) {
      await (await handle(new Request(url))).body?.cancel();
    }

    assert.equal(spans.length, 4);
    for (const span of spans) {
      assert.equal(span.scope, INSTRUMENTATION_SCOPE);
      assert.equal(span.name, SPAN_NAME);
      assert.ok(span.ended);
      const text = JSON.stringify(span);
      assert.ok(!text.includes("secret"), text);
      assert.ok(!text.includes("/srv/packs"), text);
    }
    assert.deepEqual(spans.map((s) => s.attributes), [
      {
        "http.request.method": "GET",
        "http.response.status_code": 200,
        "cordon.route": "listing",
        "http.route": "/api/sandbox-modules",
      },
      {
        "http.request.method": "GET",
        "http.response.status_code": 404,
        "cordon.route": "module",
        "http.route": "/api/sandbox-modules/:id",
        "cordon.error.code": "MODULE_NOT_FOUND",
      },
      {
        "http.request.method": "GET",
        "http.response.status_code": 503,
        "cordon.route": "module",
        "http.route": "/api/sandbox-modules/:id",
        "cordon.error.code": "DELIVERY_UNAVAILABLE",
      },
      {
        "http.request.method": "GET",
        "http.response.status_code": 404,
        "cordon.route": "none",
        "cordon.error.code": "MODULE_NOT_FOUND",
      },
    ]);
    assert.equal(spans[2]!.status?.code, 2);
    assert.deepEqual(spans[2]!.exceptions, [{
      name: "Error",
      message: "Error",
    }]);

    const counted = points.filter((p) => p.instrument === COUNTER_NAME);
    const timed = points.filter((p) => p.instrument === HISTOGRAM_NAME);
    assert.deepEqual(counted.map((p) => p.value), [1, 1, 1, 1]);
    assert.deepEqual(
      counted.map((p) => p.attributes),
      spans.map((s) => s.attributes),
    );
    assert.equal(timed.length, 4);
    for (const point of timed) assert.ok(point.value >= 0);
  } finally {
    trace.disable();
    metrics.disable();
  }
});

import assert from "node:assert/strict";
import {
  type Attributes,
  createNoopMeter,
  type Meter,
  metrics,
} from "@opentelemetry/api";
import { recordTelemetry } from "./_test_telemetry_test.ts";
import { COUNTER_NAME, SPAN_NAME, startRunTelemetry } from "./run_telemetry.ts";
import type { SandboxResult } from "./sandbox_result.ts";

const RESULT: SandboxResult = {
  ok: true,
  value: 2,
  logs: [],
  logsTruncated: false,
  metrics: { tier: "quickjs", durationMs: 1 },
};

Deno.test("startRunTelemetry() records a run's metrics when only a meter provider is registered", () => {
  const counted: Attributes[] = [];
  const meter: Meter = Object.create(createNoopMeter());
  meter.createCounter = (name: string) => ({
    add: (_value: number, attributes: Attributes = {}) => {
      if (name === COUNTER_NAME) counted.push(attributes);
    },
  });
  assert.ok(metrics.setGlobalMeterProvider({ getMeter: () => meter }));
  try {
    assert.equal(startRunTelemetry("quickjs").end(RESULT), RESULT);
  } finally {
    metrics.disable();
  }
  assert.deepEqual(counted, [{
    "cordon.tier": "quickjs",
    "cordon.outcome": "ok",
  }]);
});

Deno.test("startRunTelemetry() records a run's span when only a tracer provider is registered", () => {
  using recording = recordTelemetry();
  // The recording's meter provider goes; its tracer provider stays.
  metrics.disable();
  startRunTelemetry("vm").end(RESULT);
  assert.deepEqual(recording.spans.map((span) => [span.name, span.ended]), [
    [SPAN_NAME, true],
  ]);
  assert.deepEqual(recording.points, []);
});

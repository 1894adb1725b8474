/**
 * The check every tier's telemetry test makes of its runs: each run's
 * span, count and duration, and that nothing of the guest was recorded.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type SpanContext, SpanKind } from "@opentelemetry/api";
import type { TelemetryRecording } from "./_test_telemetry_test.ts";
import {
  COUNTER_NAME,
  HISTOGRAM_NAME,
  INSTRUMENTATION_SCOPE,
  SPAN_NAME,
} from "./run_telemetry.ts";
import type { SandboxResult } from "./sandbox_result.ts";

/**
 * Asserts that `results`, run in this order under the span `caller`, each
 * recorded an ended run span under `caller` with its tier and outcome (and
 * status `ERROR` with the code for a failure), one count and its duration,
 * and that no span or point holds any text of `hidden`.
 *
 * @param recording What the runs recorded.
 * @param caller The span that was active where the runs were asked for.
 * @param results The runs' results, in the order they ran.
 * @param hidden Texts of the guest (its context, its source) that must not
 * reach telemetry.
 */
export function assertRunsRecorded(
  recording: TelemetryRecording,
  caller: SpanContext,
  results: readonly SandboxResult[],
  hidden: readonly string[],
): void {
  const expected = results.map((result) => ({
    "cordon.tier": result.metrics.tier,
    "cordon.outcome": result.ok ? "ok" : result.error.code,
  }));
  const runs = recording.spans.filter((span) => span.name === SPAN_NAME);
  assert.deepEqual(
    runs.map((span) => ({
      scope: span.scope,
      kind: span.kind ?? SpanKind.INTERNAL,
      attributes: span.attributes,
      status: span.status?.message,
      ended: span.ended,
      parent: span.parent?.spanId,
      trace: span.context.traceId,
    })),
    expected.map((attributes) => ({
      scope: INSTRUMENTATION_SCOPE,
      kind: SpanKind.INTERNAL,
      attributes,
      status: attributes["cordon.outcome"] === "ok"
        ? undefined
        : attributes["cordon.outcome"],
      ended: true,
      parent: caller.spanId,
      trace: caller.traceId,
    })),
  );
  const pointsOf = (instrument: string) =>
    recording.points.filter((point) => point.instrument === instrument)
      .map((point) => [point.value, point.attributes]);
  assert.deepEqual(
    pointsOf(COUNTER_NAME),
    expected.map((attributes) => [1, attributes]),
  );
  assert.deepEqual(
    pointsOf(HISTOGRAM_NAME),
    results.map((result, i) => [result.metrics.durationMs, expected[i]]),
  );
  const recorded = JSON.stringify(recording);
  for (const text of hidden) assert.ok(!recorded.includes(text), recorded);
}

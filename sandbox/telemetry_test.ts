import assert from "node:assert/strict";
import { context, trace } from "@opentelemetry/api";
import { recordTelemetry } from "../protocol/_test_telemetry_test.ts";
import {
  COUNTER_NAME,
  HISTOGRAM_NAME,
  INSTRUMENTATION_SCOPE,
  SPAN_NAME,
} from "../protocol/run_telemetry.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";

Deno.test("every run records a span under the caller's, a counter and a duration, without code or context", async () => {
  using recording = recordTelemetry();
  const { spans, points } = recording;
  const secret = `context-secret-${crypto.randomUUID()}`;
  const source = `export default (context) => { throw new Error(context.s); };`;
  await using worker = createWorkerSandbox();
  await using process = createProcessSandbox();
  const caller = trace.getTracer("caller").startSpan("caller");
  const results = await context.with(
    trace.setSpan(context.active(), caller),
    async () => [
      await worker.run("export default 1;"),
      await worker.run(source, { context: { s: secret } }),
      await process.run("for (;;) {}", { timeoutMs: 200 }),
    ],
  );
  caller.end();
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
  for (const run of runs) {
    assert.equal(run.parent?.spanId, caller.spanContext().spanId);
  }
  const counted = points.filter((point) => point.instrument === COUNTER_NAME);
  assert.deepEqual(
    counted.map((point) => [point.value, point.attributes["cordon.outcome"]]),
    [[1, "ok"], [1, "GUEST_ERROR"], [1, "TIMEOUT"]],
  );
  const durations = points.filter((point) =>
    point.instrument === HISTOGRAM_NAME
  );
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
});

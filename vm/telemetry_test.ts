import assert from "node:assert/strict";
import { context, SpanKind, trace } from "@opentelemetry/api";
import { recordTelemetry } from "../protocol/_test_telemetry_test.ts";
import {
  COUNTER_NAME,
  HISTOGRAM_NAME,
  INSTRUMENTATION_SCOPE,
  SPAN_NAME,
} from "../protocol/run_telemetry.ts";
import { createVmSandbox } from "./vm_sandbox.ts";

Deno.test("createVmSandbox() records each call's run span as a child of the caller's, and its metrics, without the plugin's code, payload or logs", async () => {
  using recording = recordTelemetry();
  const { spans, points } = recording;
  const secret = `payload-secret-${crypto.randomUUID()}`;
  await using sandbox = createVmSandbox({
    pluginId: "telemetry",
    pluginModule: {
      kind: "source",
      source: "export const echo = (s) => { console.log(s); return s; };\n" +
        "export const fail = (s) => { throw new Error(s); };",
      identifier: "telemetry.js",
    },
    limits: { timeoutMs: 3000 },
  });
  const caller = trace.getTracer("caller").startSpan("caller");
  const results = await context.with(
    trace.setSpan(context.active(), caller),
    async () => [
      await sandbox.invoke("echo", secret),
      await sandbox.invoke("fail", secret),
    ],
  );
  caller.end();
  assert.deepEqual(
    results.map((result) => result.ok ? "ok" : result.error.code),
    ["ok", "GUEST_ERROR"],
  );

  const runs = spans.filter((span) => span.name === SPAN_NAME);
  assert.deepEqual(
    runs.map((span) => [
      span.scope,
      span.kind ?? SpanKind.INTERNAL,
      span.attributes,
      span.parent?.spanId,
      span.ended,
    ]),
    [
      [
        INSTRUMENTATION_SCOPE,
        SpanKind.INTERNAL,
        { "cordon.tier": "vm", "cordon.outcome": "ok" },
        caller.spanContext().spanId,
        true,
      ],
      [
        INSTRUMENTATION_SCOPE,
        SpanKind.INTERNAL,
        { "cordon.tier": "vm", "cordon.outcome": "GUEST_ERROR" },
        caller.spanContext().spanId,
        true,
      ],
    ],
  );
  assert.deepEqual(
    points.filter((point) => point.instrument === COUNTER_NAME)
      .map((point) => point.attributes),
    runs.map((span) => span.attributes),
  );
  assert.deepEqual(
    points.filter((point) => point.instrument === HISTOGRAM_NAME)
      .map((point) => point.value),
    results.map((result) => result.metrics.durationMs),
  );
  const recorded = JSON.stringify({ spans, points });
  assert.ok(!recorded.includes(secret), recorded);
  assert.ok(!recorded.includes("console.log"), recorded);
});

Deno.test("createVmSandbox() ends the span of a call that throws, with no outcome and no metrics", async () => {
  using recording = recordTelemetry();
  await using sandbox = createVmSandbox({
    pluginId: "telemetry",
    pluginModule: {
      kind: "source",
      source: "export const echo = (s) => s;",
      identifier: "telemetry.js",
    },
  });
  await assert.rejects(
    sandbox.invoke("echo", { f: (() => {}) as never }),
    TypeError,
  );
  const runs = recording.spans.filter((span) => span.name === SPAN_NAME);
  assert.equal(runs.length, 1);
  assert.equal(runs[0]!.ended, true);
  assert.deepEqual(runs[0]!.status, { code: 2, message: "TypeError" });
  assert.equal(runs[0]!.attributes["cordon.outcome"], undefined);
  assert.deepEqual(recording.points, []);
});

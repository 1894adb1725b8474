import assert from "node:assert/strict";
import { context, trace } from "@opentelemetry/api";
import { recordTelemetry } from "../protocol/_test_telemetry_test.ts";
import { assertRunsRecorded } from "../protocol/_test_run_telemetry_test.ts";
import { SPAN_NAME } from "../protocol/run_telemetry.ts";
import { createVmSandbox } from "./vm_sandbox.ts";

Deno.test("createVmSandbox() records each call's run span as a child of the caller's, and its metrics, without the plugin's code, payload or logs", async () => {
  using recording = recordTelemetry();
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

  assertRunsRecorded(recording, caller.spanContext(), results, [
    secret,
    "console.log",
  ]);
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

Deno.test("createVmSandbox() counts in instruments every call cordon.sandbox.runs counts: one refused while the realm is busy or aborted before it was sent too", async () => {
  using recording = recordTelemetry();
  await using sandbox = createVmSandbox({
    pluginId: "telemetry",
    pluginModule: {
      kind: "source",
      source: "export const echo = (s) => s;\n" +
        "export const fail = () => { throw new Error('no'); };",
      identifier: "telemetry.js",
    },
    limits: { timeoutMs: 3000 },
    maxQueued: 0,
  });
  const aborted = AbortSignal.abort();
  const results = [
    await sandbox.invoke("echo", 1, { signal: aborted }),
    // One is sent; with maxQueued 0 the others find the realm busy.
    ...await Promise.all([1, 2, 3].map((n) => sandbox.invoke("echo", n))),
    await sandbox.invoke("fail"),
  ];
  assert.deepEqual(
    results.map((result) => result.ok ? "ok" : result.error.code),
    ["ABORTED", "ok", "SANDBOX_BUSY", "SANDBOX_BUSY", "GUEST_ERROR"],
  );

  const runs = recording.points.filter((point) =>
    point.instrument === "cordon.sandbox.runs"
  );
  const failed = runs.filter((point) =>
    point.attributes["cordon.outcome"] !== "ok"
  );
  assert.equal(runs.length, 5);
  assert.equal(failed.length, 4);
  const { invocations, failures } = sandbox.instruments;
  assert.deepEqual({ invocations, failures }, {
    invocations: runs.length,
    failures: failed.length,
  });
});

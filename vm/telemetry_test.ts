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

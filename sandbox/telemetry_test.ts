import assert from "node:assert/strict";
import { context, trace } from "@opentelemetry/api";
import { recordTelemetry } from "../protocol/_test_telemetry_test.ts";
import { assertRunsRecorded } from "../protocol/_test_run_telemetry_test.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";

Deno.test("every run records a span under the caller's, a counter and a duration, without code or context", async () => {
  using recording = recordTelemetry();
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

  assertRunsRecorded(recording, caller.spanContext(), results, [
    secret,
    "throw new Error",
  ]);
});

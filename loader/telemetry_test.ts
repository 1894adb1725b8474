import assert from "node:assert/strict";
import { context, type SpanContext, trace } from "@opentelemetry/api";
import { fileURLToPath } from "node:url";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { recordTelemetry } from "../protocol/_test_telemetry_test.ts";
import { assertRunsRecorded } from "../protocol/_test_run_telemetry_test.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { createQuickJSLoader, type QuickJSLoader } from "./quickjs_loader.ts";
import { createQuickJSPool } from "./quickjs_pool.ts";

const PACKS = fileURLToPath(new URL("../fixtures/packs", import.meta.url));

/** Three runs inside the caller's span: a value, a guest error, a denial. */
async function runInSpan(
  runner: Pick<QuickJSLoader, "run">,
  secret: string,
): Promise<{ results: SandboxResult[]; caller: SpanContext }> {
  const span = trace.getTracer("caller").startSpan("caller");
  const results = await context.with(
    trace.setSpan(context.active(), span),
    async () => [
      await runner.run("export default 1 + 1;"),
      await runner.run(
        `export default (c) => { console.log(c.s); throw new Error(c.s); };`,
        { context: { s: secret } },
      ),
      await runner.run({
        source: `import fs from "node:fs"; export default "${secret}";`,
      }),
    ],
  );
  span.end();
  return { results, caller: span.spanContext() };
}

Deno.test("the QuickJS loader and pool record each run's span as a child of the caller's, and its metrics, without the guest's code, context or logs", async (t) => {
  using recording = recordTelemetry();
  const { spans, points } = recording;
  const catalog = await createDiskCatalog(PACKS);
  const secret = `context-secret-${crypto.randomUUID()}`;
  using loader = await createQuickJSLoader({ catalog });
  await using pool = await createQuickJSPool({ catalog, size: 1 });

  for (const [name, runner] of [["loader", loader], ["pool", pool]] as const) {
    await t.step(name, async () => {
      spans.length = 0;
      points.length = 0;
      const { results, caller } = await runInSpan(runner, secret);
      assert.deepEqual(
        results.map((result) => result.ok ? "ok" : result.error.code),
        ["ok", "GUEST_ERROR", "IMPORT_NODE_BUILTIN"],
      );
      assertRunsRecorded(recording, caller, results, [
        secret,
        "throw new Error",
      ]);
    });
  }
});

// The leak probe of the QuickJS pool on Node, whose runners are
// worker_threads workers of this process (`deno task build:node` writes
// the build to dist/loader/): the runs of loader/leak_test.ts, then
// disposal with runs under way and 20 pools created and disposed, must
// leave this process as it found it, its threads included.

import { test } from "node:test";
import {
  assertBackToBaseline,
  assertResult,
  HAS_PROC,
  takeReading,
} from "../../vm/node_test/leak_probe.mjs";
import {
  LONG_BUILT_IN_STEP,
  runSourceMix,
  SOURCE_STEPS,
} from "./leak_cases.mjs";
import {
  createQuickJSPool,
  EMPTY_CATALOG as catalog,
  RUNNER_URL,
} from "./_node_pool.mjs";

function createPool() {
  return createQuickJSPool({
    catalog,
    size: 2,
    runnerUrl: RUNNER_URL,
    memoryLimitBytes: 8 * 1024 * 1024,
  });
}

test(
  "the QuickJS pool on Node leaves no runner thread, descriptor, memory or busy core behind after a hostile mix, a disposal under way and 20 lifecycles",
  { skip: !HAS_PROC },
  async () => {
    const warm = await createPool();
    await warm.run("export default 1;");
    await warm[Symbol.asyncDispose]();
    const baseline = takeReading();
    const pool = await createPool();
    try {
      await runSourceMix(
        pool,
        [...SOURCE_STEPS, LONG_BUILT_IN_STEP],
        2,
        "pool on Node",
      );
      // Disposed with a run computing, one waiting for the runner the
      // first kill replaces, and one waiting for a slot.
      const killed = pool.run(LONG_BUILT_IN_STEP.source, { timeoutMs: 100 });
      const computing = pool.run("for (;;) {}", { timeoutMs: 5000 });
      const waiting = pool.run("export default 1;");
      const queued = pool.run("export default 2;");
      assertResult(await killed, { code: "TIMEOUT" }, "pool on Node");
      await pool[Symbol.asyncDispose]();
      for (const run of [computing, waiting, queued]) {
        assertResult(await run, { code: "SANDBOX_DISPOSED" }, "pool on Node");
      }
    } finally {
      await pool[Symbol.asyncDispose]();
    }
    for (let i = 0; i < 20; i++) {
      const fresh = await createPool();
      try {
        assertResult(
          await fresh.run("export default 1;"),
          { value: 1 },
          `pool on Node, lifecycle ${i}`,
        );
      } finally {
        await fresh[Symbol.asyncDispose]();
      }
    }
    console.log(await assertBackToBaseline(baseline, "pool on Node"));
  },
);

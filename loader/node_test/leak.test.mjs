// The leak probe of the QuickJS pool on Node, whose runners are
// worker_threads workers of this process (`deno task build:node` writes
// the build to dist/node/): the runs of loader/leak_test.ts, then
// disposal with runs under way and 20 pools created and disposed, must
// leave this process as it found it, its threads included.

import { test } from "node:test";
import { HAS_PROC } from "../../vm/node_test/leak_probe.mjs";
import {
  disposePoolUnderWay,
  LONG_BUILT_IN_STEP,
  probeSourceTier,
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
    const where = "pool on Node";
    console.log(
      await probeSourceTier(createPool, {
        steps: [...SOURCE_STEPS, LONG_BUILT_IN_STEP],
        rounds: 2,
        disposeUnderWay: (pool) => disposePoolUnderWay(pool, where),
      }, where),
    );
  },
);

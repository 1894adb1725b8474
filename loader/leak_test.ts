import { EMPTY_CATALOG } from "../catalog/mod.ts";
import { assertResult, HAS_PROC } from "../vm/node_test/leak_probe.mjs";
import {
  disposePoolUnderWay,
  LONG_BUILT_IN_STEP,
  probeSourceTier,
  SOURCE_STEPS,
} from "./node_test/leak_cases.mjs";
import { createQuickJSLoader } from "./quickjs_loader.ts";
import { createQuickJSPool, type QuickJSPool } from "./quickjs_pool.ts";

// The leak probe of the QuickJS tiers on Deno: a mix of hostile and
// failing runs, repeated, then disposal with runs under way, must leave
// this process as it found it; so must creating and disposing a loader or
// pool 20 times. loader/node_test/leak.test.mjs runs the pool's on Node.

const QUICKJS_MEMORY_BYTES = 8 * 1024 * 1024;
/**
 * The in-thread loader's engines are WebAssembly memories of this process,
 * which V8 frees only when it collects them, and it collects them once
 * some 64 MiB of such memory has piled up: after the mix and 20 lifecycles
 * the growth measured 60 to 72 MiB (Linux, Deno 2.9, no forced
 * collection). An engine kept alive holds about 3.4 MiB, so this bound
 * catches a leak per run, not one per lifecycle.
 */
const LOADER_RESIDENT_GROWTH_BYTES = 160 * 1024 * 1024;
const catalog = EMPTY_CATALOG;

/** The in-thread loader, with an async disposal like the pool's. */
async function loaderRuns() {
  const loader = await createQuickJSLoader({
    catalog,
    memoryLimitBytes: QUICKJS_MEMORY_BYTES,
  });
  return {
    run: loader.run.bind(loader),
    [Symbol.asyncDispose]: () => {
      loader[Symbol.dispose]();
      return Promise.resolve();
    },
  };
}

type LoaderRuns = Awaited<ReturnType<typeof loaderRuns>>;

function poolRuns() {
  return createQuickJSPool({
    catalog,
    size: 2,
    isolation: "process",
    memoryLimitBytes: QUICKJS_MEMORY_BYTES,
  });
}

// The in-thread loader holds the caller's thread while a guest computes,
// so no timer can abort it then, nor end one long built-in call
// (docs/loader.md, Limits).
const LOADER_STEPS = SOURCE_STEPS.filter((step) =>
  step.name !== "a signal aborted while the guest loops"
);

Deno.test({
  name:
    "the in-thread loader leaves no descriptor, thread, memory or busy core behind after a hostile mix and 20 lifecycles",
  ignore: !HAS_PROC,
  async fn() {
    console.log(
      await probeSourceTier(loaderRuns, {
        steps: LOADER_STEPS,
        rounds: 3,
        // A run under way when the loader is disposed still finishes.
        async disposeUnderWay(runs: LoaderRuns) {
          const inFlight = runs.run("export default 'last';");
          await runs[Symbol.asyncDispose]();
          assertResult(await inFlight, { value: "last" }, "loader");
        },
        residentGrowthBytes: LOADER_RESIDENT_GROWTH_BYTES,
      }, "loader"),
    );
  },
});

Deno.test({
  name:
    "the QuickJS pool leaves no runner, descriptor, thread, memory or busy core behind after a hostile mix, a disposal under way and 20 lifecycles",
  ignore: !HAS_PROC,
  async fn() {
    console.log(
      await probeSourceTier(poolRuns, {
        steps: [...SOURCE_STEPS, LONG_BUILT_IN_STEP],
        rounds: 2,
        disposeUnderWay: (pool: QuickJSPool) =>
          disposePoolUnderWay(pool, "pool"),
      }, "pool"),
    );
  },
});

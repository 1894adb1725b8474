import {
  probeSourceTier,
  SOURCE_STEPS,
} from "../loader/node_test/leak_cases.mjs";
import { assertResult, HAS_PROC } from "../vm/node_test/leak_probe.mjs";
import { createProcessSandbox } from "./process_sandbox.ts";
import type { Sandbox } from "./types.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";

// The leak probe of the worker and process tiers: a mix of hostile and
// failing runs, repeated, then disposal with runs under way, must leave
// this process as it found it (no host or guest process, descriptor or
// thread, no busy core); so must creating and disposing a sandbox 20 times.

/** The smallest V8 heap the tiers start with. */
const V8_MEMORY_BYTES = 16 * 1024 * 1024;

const V8_STEPS = [
  ...SOURCE_STEPS,
  {
    name: "a guest that closes its realm",
    source: "globalThis.close?.(); export default 1;",
    expect: { code: "SANDBOX_CRASHED" },
    timeoutMs: 5000,
  },
  {
    name: "a memory bomb outside the V8 heap",
    source: "const a = []; for (;;) a.push(new Uint8Array(1 << 20).fill(1));",
    expect: { code: "OUT_OF_MEMORY" },
    timeoutMs: 20_000,
  },
];

const TIERS = {
  worker: {
    create: () =>
      createWorkerSandbox({
        pool: 1,
        concurrency: 2,
        memoryLimitBytes: V8_MEMORY_BYTES,
      }),
    steps: V8_STEPS,
  },
  process: {
    create: () =>
      createProcessSandbox({
        concurrency: 2,
        memoryLimitBytes: V8_MEMORY_BYTES,
      }),
    steps: [
      ...V8_STEPS,
      {
        name: "a guest that exits its process",
        source: "Deno.exit(3);",
        expect: { code: "SANDBOX_CRASHED" },
        timeoutMs: 5000,
      },
    ],
  },
};

for (const [tier, { create, steps }] of Object.entries(TIERS)) {
  Deno.test({
    name:
      `the ${tier} sandbox leaves no process, descriptor, thread, memory or busy core behind after a hostile mix, a disposal under way and 20 lifecycles`,
    ignore: !HAS_PROC,
    async fn() {
      console.log(
        await probeSourceTier(create, {
          steps,
          rounds: 2,
          // Disposed with a run computing, one waiting on a promise and one
          // waiting for a slot.
          async disposeUnderWay(runs: Sandbox) {
            const computing = runs.run("for (;;) {}", { timeoutMs: 5000 });
            const sleeping = runs.run(
              "export default new Promise(() => {});",
              { timeoutMs: 5000 },
            );
            const queued = runs.run("export default 1;");
            await new Promise((resolve) => setTimeout(resolve, 300));
            await runs[Symbol.asyncDispose]();
            for (const run of [computing, sleeping, queued]) {
              assertResult(await run, { code: "SANDBOX_DISPOSED" }, tier);
            }
          },
        }, tier),
      );
    },
  });
}

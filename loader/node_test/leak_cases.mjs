// The runs of the leak probes of the tiers that run guest sources (the
// QuickJS loader and pool, the worker and process sandboxes), written once:
// loader/leak_test.ts and sandbox/leak_test.ts run them on Deno,
// loader/node_test/leak.test.mjs on Node. This file is JavaScript so that
// Node runs it as is.

import {
  assertBackToBaseline,
  assertResult,
  takeReading,
  withSignal,
} from "../../vm/node_test/leak_probe.mjs";

/** A guest that ends before its deadline. */
const CALM_MS = 5000;
/** A guest that must end at its deadline. */
const SHORT_MS = 300;

/**
 * The runs every source tier gives, each with its one answer: a plain
 * value, a throw, a syntax error, a denied import, runaways, a memory bomb,
 * a stack overflow, and signals aborted before and during a run.
 */
export const SOURCE_STEPS = Object.freeze([
  {
    name: "a plain value",
    source: "export default [1, 'two', { three: 3 }];",
    expect: { value: [1, "two", { three: 3 }] },
    timeoutMs: CALM_MS,
  },
  {
    name: "a guest that throws",
    source: "throw new TypeError('no');",
    expect: { code: "GUEST_ERROR" },
    timeoutMs: CALM_MS,
  },
  {
    name: "a syntax error",
    source: "export default (;",
    expect: { code: "GUEST_SYNTAX_ERROR" },
    timeoutMs: CALM_MS,
  },
  {
    name: "a denied import",
    source: 'import fs from "node:fs"; export default fs;',
    expect: { code: "IMPORT_NODE_BUILTIN" },
    timeoutMs: CALM_MS,
  },
  {
    name: "an endless loop",
    source: "for (;;) {}",
    expect: { code: "TIMEOUT" },
    timeoutMs: SHORT_MS,
  },
  {
    name: "a promise that never settles",
    source: "export default new Promise(() => {});",
    expect: { code: "TIMEOUT" },
    timeoutMs: SHORT_MS,
  },
  {
    name: "a memory bomb",
    source: "const a = []; for (let i = 0; ; i++) a.push('x'.repeat(1e4) + i);",
    expect: { code: "OUT_OF_MEMORY" },
    timeoutMs: 20_000,
  },
  {
    name: "a stack overflow",
    source: "function down() { return down() + 1; } export default down();",
    expect: { code: "STACK_OVERFLOW" },
    timeoutMs: CALM_MS,
  },
  {
    name: "a signal aborted before the run",
    source: "export default 1;",
    expect: { code: "ABORTED" },
    timeoutMs: CALM_MS,
    abortAfterMs: 0,
  },
  {
    name: "a signal aborted while the guest loops",
    source: "for (;;) {}",
    expect: { code: "ABORTED" },
    timeoutMs: CALM_MS,
    abortAfterMs: 100,
  },
]);

/** One long built-in call: only killing its thread or process ends it. */
export const LONG_BUILT_IN_STEP = Object.freeze({
  name: "one long built-in call",
  source: "export default Array.prototype.indexOf.call({ length: 2e9 }, 1);",
  expect: { code: "TIMEOUT" },
  timeoutMs: 200,
});

/** The run after every step: it must answer right. */
const PROBE = "export default (context) => context.n * 2;";

/**
 * Runs every step `rounds` times on `runs` (anything with the loader's
 * `run(source, options)`), each followed by a run that must answer right
 * on the same instance; returns how many runs it made.
 */
export async function runSourceMix(runs, steps, rounds, where) {
  let count = 0;
  for (let round = 0; round < rounds; round++) {
    for (const step of steps) {
      const result = await withSignal(
        step.abortAfterMs,
        (signal) =>
          runs.run(step.source, { timeoutMs: step.timeoutMs, signal }),
      );
      assertResult(result, step.expect, `${where}, ${step.name}`);
      const n = count;
      assertResult(
        await runs.run(PROBE, { context: { n }, timeoutMs: CALM_MS }),
        { value: n * 2 },
        `${where}, the run after ${step.name}`,
      );
      count += 2;
    }
  }
  return count;
}

/**
 * The QuickJS pool's probe, on Deno and Node alike: after a warm-up pool,
 * the mix, then disposal with a run computing, one waiting for the runner
 * the first kill replaces and one waiting for a slot, then 20 pools
 * created and disposed, must leave this process as the warm-up left it.
 * Returns the line that gives both readings.
 *
 * @param createPool Creates a pool of two runners.
 * @param where Names the tier in failures and in the line.
 */
export async function probePool(createPool, where) {
  const warm = await createPool();
  try {
    await warm.run("export default 1;");
  } finally {
    await warm[Symbol.asyncDispose]();
  }
  const baseline = takeReading();
  const pool = await createPool();
  try {
    await runSourceMix(pool, [...SOURCE_STEPS, LONG_BUILT_IN_STEP], 2, where);
    const killed = pool.run(LONG_BUILT_IN_STEP.source, { timeoutMs: 100 });
    const computing = pool.run("for (;;) {}", { timeoutMs: 5000 });
    const waiting = pool.run("export default 1;");
    const queued = pool.run("export default 2;");
    assertResult(await killed, { code: "TIMEOUT" }, where);
    await pool[Symbol.asyncDispose]();
    for (const run of [computing, waiting, queued]) {
      assertResult(await run, { code: "SANDBOX_DISPOSED" }, where);
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
        `${where}, lifecycle ${i}`,
      );
    } finally {
      await fresh[Symbol.asyncDispose]();
    }
  }
  return await assertBackToBaseline(baseline, where);
}

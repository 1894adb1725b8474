// The runs of the leak probes of the tiers that run guest sources (the
// QuickJS loader and pool, the worker and process sandboxes), written once:
// loader/leak_test.ts and sandbox/leak_test.ts run them on Deno,
// loader/node_test/leak.test.mjs on Node. This file is JavaScript so that
// Node runs it as is.

import assert from "node:assert/strict";
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
 * The leak probe of a tier that runs guest sources, on Deno and Node
 * alike: after a warm-up instance, `plan.rounds` of `plan.steps` on one
 * instance, then `plan.disposeUnderWay(runs)` (which disposes it with runs
 * under way and checks their answers), then 20 instances created, run once
 * and disposed, must leave this process as the warm-up left it. Returns
 * the line that gives both readings.
 *
 * @param create Makes an instance with `run(source, options)` and
 * `[Symbol.asyncDispose]()`, or a promise of one.
 * @param plan `{ steps, rounds, disposeUnderWay, residentGrowthBytes? }`.
 * @param where Names the tier in failures and in the line.
 */
export async function probeSourceTier(create, plan, where) {
  const warm = await create();
  try {
    await warm.run("export default 1;");
  } finally {
    await warm[Symbol.asyncDispose]();
  }
  const baseline = takeReading();
  const runs = await create();
  try {
    await runSourceMix(runs, plan.steps, plan.rounds, where);
    await plan.disposeUnderWay(runs);
    await assert.rejects(runs.run("export default 1;"), {
      code: "SANDBOX_DISPOSED",
    });
  } finally {
    await runs[Symbol.asyncDispose]();
  }
  for (let i = 0; i < 20; i++) {
    const fresh = await create();
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
  return await assertBackToBaseline(
    baseline,
    where,
    plan.residentGrowthBytes,
  );
}

/**
 * How the pool's probe disposes a pool of two runners: with a run
 * computing, one waiting for the runner the first kill replaces and one
 * waiting for a slot.
 */
export async function disposePoolUnderWay(pool, where) {
  const killed = pool.run(LONG_BUILT_IN_STEP.source, { timeoutMs: 100 });
  const computing = pool.run("for (;;) {}", { timeoutMs: 5000 });
  const waiting = pool.run("export default 1;");
  const queued = pool.run("export default 2;");
  assertResult(await killed, { code: "TIMEOUT" }, where);
  await pool[Symbol.asyncDispose]();
  for (const run of [computing, waiting, queued]) {
    assertResult(await run, { code: "SANDBOX_DISPOSED" }, where);
  }
}

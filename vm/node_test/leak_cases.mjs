// The leak probe of the vm sandbox, written once: vm/leak_test.ts registers
// it on Deno's isolations (process, worker, quickjs),
// vm/node_test/leak.test.mjs on Node's (thread, process). A mix of hostile
// and failing calls and modules, then disposal with calls under way, must
// leave this process as it found it (no realm process, thread or
// descriptor, no busy core); so must creating and disposing a sandbox 20
// times. This file is JavaScript so that Node runs it as is.

import assert from "node:assert/strict";
import {
  assertBackToBaseline,
  assertResult,
  HAS_PROC,
  takeReading,
  withSignal,
} from "./leak_probe.mjs";

const MAX_PAYLOAD_BYTES = 64 * 1024;
const SHORT_MS = 300;
const CALM_MS = 5000;

const PLUGIN = `
export const echo = (x) => x;
export function boom() { throw new TypeError("no"); }
export function loop() { for (;;) {} }
export function hang() { return new Promise(() => {}); }
export function bomb() { const h = []; for (;;) h.push(new Array(1e5).fill(h.length)); }
export function bytes() { const h = []; for (;;) h.push(new Uint8Array(1 << 20).fill(1)); }
export async function sneak() { return await import("node:fs"); }
export function deep() { function down() { return down() + 1; } return down(); }
export function flood() { return "x".repeat(${
  MAX_PAYLOAD_BYTES + 2 * 1024 * 1024
}); }
export function maker() { return () => 1; }
`;

/** The calls of the mix, each with its one answer. */
const CALLS = [
  { name: "echo", expect: { value: 1 }, timeoutMs: CALM_MS },
  { name: "boom", expect: { code: "GUEST_ERROR" }, timeoutMs: CALM_MS },
  { name: "loop", expect: { code: "TIMEOUT" }, timeoutMs: SHORT_MS },
  { name: "hang", expect: { code: "TIMEOUT" }, timeoutMs: SHORT_MS },
  { name: "bomb", expect: { code: "OUT_OF_MEMORY" }, timeoutMs: 20_000 },
  // Bytes outside the V8 heap: a realm process's resident memory ends it,
  // QuickJS's heap limit on quickjs. Node's thread realm shares the
  // host's process and has no such bound (docs/vm.md, Budgets): there the
  // bytes take the host's memory until the deadline, so it is not run.
  {
    name: "bytes",
    expect: { code: "OUT_OF_MEMORY" },
    timeoutMs: 20_000,
    skipOn: "thread",
  },
  { name: "sneak", expect: { code: "IMPORT_DYNAMIC" }, timeoutMs: CALM_MS },
  { name: "deep", expect: { code: "STACK_OVERFLOW" }, timeoutMs: CALM_MS },
  // An answer far over the limit is refused while the realm writes it.
  {
    name: "flood",
    expect: { code: "RESULT_NOT_SERIALIZABLE" },
    timeoutMs: CALM_MS,
  },
  {
    name: "maker",
    expect: { code: "RESULT_NOT_SERIALIZABLE" },
    timeoutMs: CALM_MS,
  },
  {
    name: "missing",
    expect: { code: "BRIDGE_INVALID_PLUGIN_SURFACE" },
    timeoutMs: CALM_MS,
  },
  {
    name: "echo",
    expect: { code: "ABORTED" },
    timeoutMs: CALM_MS,
    abortAfterMs: 0,
  },
  // Waiting, not computing: the realm is free for the next call at once.
  // An aborted call keeps its deadline, which ends the realm when it comes
  // (docs/vm.md) and fails the calls in flight then: here it never comes
  // before the disposal.
  {
    name: "hang",
    expect: { code: "ABORTED" },
    timeoutMs: 60_000,
    abortAfterMs: 50,
  },
];

/** Modules that fail to start, each in a sandbox of its own. */
const MODULES = [
  { source: "export const x = (;", expect: { code: "GUEST_SYNTAX_ERROR" } },
  {
    source: 'import fs from "node:fs"; export const x = fs;',
    expect: { code: "IMPORT_NODE_BUILTIN" },
  },
  { source: "for (;;) {} export const x = 1;", expect: { code: "TIMEOUT" } },
  {
    source: "export function start() { throw new Error('no'); }",
    expect: { code: "GUEST_ERROR" },
  },
];

/**
 * Registers the probe.
 *
 * @param api `createVmSandbox` of the build under test and `isolations`,
 * the isolations to probe on this runtime.
 * @param test Registers one test: `test(name, { skip }, fn)`.
 */
export function registerVmLeakCases(api, test) {
  const { createVmSandbox, isolations } = api;

  function sandbox(isolation, source = PLUGIN, timeoutMs = SHORT_MS) {
    return createVmSandbox({
      pluginId: "leak",
      isolation,
      pluginModule: { kind: "source", source, identifier: "leak.js" },
      limits: {
        timeoutMs,
        memoryLimitBytes: 32 * 1024 * 1024,
        maxPayloadBytes: MAX_PAYLOAD_BYTES,
      },
    });
  }

  function call(box, step) {
    return withSignal(
      step.abortAfterMs,
      (signal) =>
        box.invoke(step.name, 1, { timeoutMs: step.timeoutMs, signal }),
    );
  }

  for (const isolation of isolations) {
    test(
      `the vm sandbox with isolation ${isolation} leaves no realm, descriptor, thread, memory or busy core behind after a hostile mix, a disposal under way and 20 lifecycles`,
      { skip: !HAS_PROC },
      async () => {
        const warm = sandbox(isolation);
        await warm.invoke("echo", 1);
        await warm.dispose();
        const baseline = takeReading();
        const where = `vm ${isolation}`;
        const box = sandbox(isolation);
        try {
          for (const [index, step] of CALLS.entries()) {
            if (step.skipOn === isolation) continue;
            assertResult(
              await call(box, step),
              step.expect,
              `${where}, ${step.name}`,
            );
            assertResult(
              await box.invoke("echo", index, { timeoutMs: CALM_MS }),
              { value: index },
              `${where}, the call after ${step.name}`,
            );
          }
          // An aborted call that computes keeps its realm until its
          // deadline (docs/vm.md): the call that waited behind it fails
          // with the realm, and the one after it is answered. A QuickJS
          // realm interrupts any stretch of plugin code at limits.timeoutMs
          // (300 ms, before this call's 1000), so there the waiting call is
          // answered first.
          assertResult(
            await call(box, {
              name: "loop",
              timeoutMs: 1000,
              abortAfterMs: 50,
            }),
            { code: "ABORTED" },
            `${where}, an aborted loop`,
          );
          assertResult(
            await box.invoke("echo", 2, { timeoutMs: CALM_MS }),
            isolation === "quickjs"
              ? { value: 2 }
              : { code: "SANDBOX_CRASHED" },
            `${where}, the call behind an aborted loop`,
          );
          assertResult(
            await box.invoke("echo", 3, { timeoutMs: CALM_MS }),
            { value: 3 },
            `${where}, the call after an aborted loop`,
          );
          // Disposed with one call computing and one waiting.
          const computing = box.invoke("loop", null, { timeoutMs: CALM_MS });
          const waiting = box.invoke("hang", null, { timeoutMs: CALM_MS });
          await new Promise((resolve) => setTimeout(resolve, 100));
          await box.dispose();
          for (const pending of [computing, waiting]) {
            assertResult(
              await pending,
              { code: "SANDBOX_DISPOSED" },
              `${where}, a call under way at the disposal`,
            );
          }
          await assert.rejects(box.invoke("echo", 1), {
            code: "SANDBOX_DISPOSED",
          });
        } finally {
          await box.dispose();
        }
        for (const module of MODULES) {
          const failing = sandbox(isolation, module.source);
          try {
            assertResult(
              await failing.start(),
              module.expect,
              `${where}, ${module.source}`,
            );
          } finally {
            await failing.dispose();
          }
        }
        for (let i = 0; i < 20; i++) {
          // A calm limit: these lifecycles test what a realm leaves behind,
          // and a loaded machine can take more than SHORT_MS to evaluate
          // even this module.
          const fresh = sandbox(isolation, PLUGIN, CALM_MS);
          try {
            assertResult(
              await fresh.invoke("echo", i),
              { value: i },
              `${where}, lifecycle ${i}`,
            );
          } finally {
            await fresh.dispose();
          }
        }
        console.log(await assertBackToBaseline(baseline, where));
      },
    );
  }
}

// This module is browser compatible.

/**
 * How much QuickJS stack the calling thread's own native stack holds.
 *
 * QuickJS checks its stack limit against the C stack in WebAssembly
 * memory, but every QuickJS call also takes a frame of the host's native
 * stack, which the host sizes per thread: a browser's dedicated Worker has
 * about half the stack of its page (Chromium: 7,000 plain JavaScript frames
 * against 12,500), and there plain recursion ran out of the host's stack
 * under the default `maxStackSizeBytes` of 256 KiB. The
 * host's `RangeError` is no error the guest can catch, and it costs the
 * engine; so a run's stack limit is capped below what the thread holds,
 * measured once per thread and variant on a throwaway module, when a run
 * first needs it (see `Executor`).
 *
 * @module
 */

import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSSyncVariant,
} from "quickjs-emscripten-core";
import { DEFAULT_LIMITS, MAX_STACK_SIZE_BYTES } from "./_limits.ts";

/**
 * The share of the measured stack a run may use. The host calls into a run
 * from as deep as it measures (in a Chromium Web Worker both leave 10,600
 * plain JavaScript frames), but the host's frames for the engine's code
 * change size as it gets optimised: fresh workers of one page measured
 * from 142 to 228 KiB, and a guest's recursion took up to 1.48 times the
 * host's stack per byte of QuickJS's that its worker's measurement took.
 * At half, a guest meets QuickJS's own check with a quarter of the
 * thread's stack left at worst for its catch; other recursion (getters,
 * proxies, built-ins) may take more per byte still. At 0.6 a tenth was
 * left, at 0.65 a guest that caught its own overflow got the host's
 * instead in 19 of 60 runs, and at three quarters in about half.
 */
const USABLE_SHARE = 0.5;

const measured = new Map<QuickJSSyncVariant, Promise<number>>();

/**
 * Whether this code runs on a Web Worker (a browser's or Deno's), whose
 * native stack may be much smaller than its page's or process's main
 * thread's.
 */
export const ON_WORKER_THREAD: boolean =
  typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope ===
    "function";

/**
 * The most QuickJS stack a run on this thread may be given, in bytes, so
 * that plain recursion meets QuickJS's own, catchable check before the
 * host's native stack runs out. The largest allowed limit when the thread
 * holds more; never under the default on a main thread, where a run with
 * the default is not measured (it fits there), so asking for more never
 * gives less.
 */
export function hostStackCapBytes(
  variant: QuickJSSyncVariant,
): Promise<number> {
  let cap = measured.get(variant);
  if (cap === undefined) {
    // A module that cannot even start fails its engine too; no cap then.
    cap = measure(variant).then(
      (bytes) =>
        ON_WORKER_THREAD
          ? bytes
          : Math.max(bytes, DEFAULT_LIMITS.maxStackSizeBytes),
      () => MAX_STACK_SIZE_BYTES,
    );
    measured.set(variant, cap);
  }
  return cap;
}

/**
 * Recurses in a fresh QuickJS module without its own check (up to the
 * largest limit a run may ask for) until the host's stack runs out inside
 * WebAssembly, and reads how deep QuickJS's C stack went: the host's error
 * skips the frames' epilogues, so the stack pointer stays where it ran out
 * and the next call starts there. No host function is called while the
 * host's stack is nearly full, so nothing reports an error on the console.
 * The module is dropped after.
 */
async function measure(variant: QuickJSSyncVariant): Promise<number> {
  const largest = MAX_STACK_SIZE_BYTES;
  const module = await newQuickJSWASMModuleFromVariant(variant);
  const runtime = module.newRuntime();
  runtime.setMaxStackSize(largest);
  const context = runtime.newContext();
  let address = -1;
  // An argument's handle points into the C stack of the call that passes it.
  const mark = context.newFunction("mark", (argument) => {
    address = argument.value as unknown as number;
  });
  context.setProp(context.global, "mark", mark);
  let top = -1;
  try {
    context.unwrapResult(context.evalCode("mark(0)")).dispose();
    top = address;
    context.evalCode("function f() { f(); } f();").dispose();
    // QuickJS's own check ended it first: the thread holds the largest limit.
    return largest;
  } catch {
    // The host's stack ran out inside WebAssembly, or the module failed
    // before the recursion; then the next call tells nothing.
  }
  try {
    context.unwrapResult(context.evalCode("mark(0)")).dispose();
  } catch {
    return largest;
  }
  if (top < 0 || address >= top) return largest;
  return Math.floor((top - address) * USABLE_SHARE);
}

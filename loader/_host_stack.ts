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
 * The share of the measured stack a run may use: the host calls into a run
 * from deeper than the measurement does, the measurement runs code the
 * host has not optimised yet, whose frames are smaller (in a Chromium Web
 * Worker a second measurement read 8% less, every time), and other
 * recursion (getters, proxies, built-ins) takes more of the host's stack
 * per byte of QuickJS's. At three quarters, a guest that caught its own
 * overflow there got the host's instead in about half the runs.
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

// This module is browser compatible.

/**
 * How much QuickJS stack the calling thread's own native stack holds.
 *
 * QuickJS checks its stack limit against the C stack in WebAssembly
 * memory, but every QuickJS call also takes a frame of the host's native
 * stack, which the host sizes per thread: a browser's dedicated Worker has
 * about half the stack of its page (Chromium: 7,000 plain JavaScript frames
 * against 12,500), and there plain recursion ran out of the host's stack at
 * about 240 KiB of QuickJS stack, under the default `maxStackSizeBytes`. The
 * host's `RangeError` is no error the guest can catch, and it costs the
 * engine; so a run's stack limit is capped below what the thread holds,
 * measured once per thread and variant on a throwaway module.
 *
 * @module
 */

import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSSyncVariant,
} from "quickjs-emscripten-core";
import { MAX_STACK_SIZE_BYTES } from "./_limits.ts";

/**
 * The share of the measured stack a run may use: the host calls into a run
 * from deeper than the measurement does, and other recursion (getters,
 * proxies, built-ins) takes more of the host's stack per byte of QuickJS's.
 */
const USABLE_SHARE = 0.75;

const measured = new Map<QuickJSSyncVariant, Promise<number>>();

/**
 * The most QuickJS stack a run on this thread may be given, in bytes, so
 * that plain recursion meets QuickJS's own, catchable check before the
 * host's native stack runs out. The largest allowed limit when the thread
 * holds more.
 */
export function hostStackCapBytes(
  variant: QuickJSSyncVariant,
): Promise<number> {
  let cap = measured.get(variant);
  if (cap === undefined) {
    cap = measure(variant);
    measured.set(variant, cap);
  }
  return cap;
}

/**
 * Recurses in a fresh QuickJS module without its own check (up to the
 * largest limit a run may ask for) until the host's stack runs out, noting
 * how deep QuickJS's stack went on the way. The module is dropped after.
 */
async function measure(variant: QuickJSSyncVariant): Promise<number> {
  const largest = MAX_STACK_SIZE_BYTES;
  const module = await newQuickJSWASMModuleFromVariant(variant);
  const runtime = module.newRuntime();
  runtime.setMaxStackSize(largest);
  const context = runtime.newContext();
  let top = -1;
  let deepest = Infinity;
  // An argument's handle points into the C stack of the call that passes it.
  const mark = context.newFunction("mark", (argument) => {
    const address = argument.value as unknown as number;
    if (top < 0) top = address;
    if (address < deepest) deepest = address;
  });
  context.setProp(context.global, "mark", mark);
  let reachedOwnCheck = false;
  try {
    const result = context.evalCode("function f() { mark(0); f(); } f();");
    // QuickJS's check ended it first, or the host's error reached QuickJS
    // through `mark` and unwound it.
    reachedOwnCheck = result.error !== undefined &&
      context.dump(result.error)?.message === "stack overflow";
    result.dispose();
    mark.dispose();
    context.dispose();
    runtime.dispose();
  } catch {
    // The host's stack ran out inside WebAssembly: the module is unusable
    // and is dropped as it is.
  }
  if (reachedOwnCheck || top < 0) return largest;
  return Math.floor((top - deepest) * USABLE_SHARE);
}

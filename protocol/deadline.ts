// This module is browser compatible.

/**
 * The one way host-side code bounds a wait on work it cannot stop itself
 * (a plugin's fetch or capability, a plugin's `stop()`, a bridge under
 * test, a catalog's prefetch, an operator's `identify`): the work races a
 * timer or a signal, and the timer is cleared or the listener removed
 * whichever wins, so a bounded wait leaves nothing behind.
 *
 * @module
 */

/**
 * Settles as `work` does, or, once `ms` have passed first, as `late()`
 * returns or throws. The work goes on: `late` aborts it where it can.
 *
 * @param work What to wait for.
 * @param ms How long to wait for it, in milliseconds.
 * @param late What the wait settles with once `ms` have passed: its value
 * resolves it, what it throws rejects it.
 * @returns What `work` settles with, or what `late` returns.
 * @throws What `work` rejects with, or what `late` throws.
 * @example
 * ```ts
 * import { settleWithin } from "./deadline.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(await settleWithin(Promise.resolve("done"), 1000, () => "late"), "done");
 * const never = new Promise<string>(() => {});
 * assert.equal(await settleWithin(never, 1, () => "late"), "late");
 * ```
 */
export async function settleWithin<T>(
  work: T | Promise<T>,
  ms: number,
  late: () => T,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  // Once work has won, this never settles, and nothing holds it.
  const timedOut = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  }).then(late);
  try {
    return await Promise.race([work, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Settles as `work` does, or, once `signal` aborts first (at once when it
 * has), as `aborted()` returns or throws. The work goes on; without a
 * signal this waits for the work alone.
 *
 * @param work What to wait for.
 * @param signal What ends the wait.
 * @param aborted What the wait settles with once `signal` aborts: its
 * value resolves it, what it throws rejects it.
 * @returns What `work` settles with, or what `aborted` returns.
 * @throws What `work` rejects with, or what `aborted` throws.
 * @example
 * ```ts
 * import { settleUnlessAborted } from "./deadline.ts";
 * import assert from "node:assert/strict";
 *
 * const never = new Promise<string>(() => {});
 * const controller = new AbortController();
 * const waiting = settleUnlessAborted(never, controller.signal, () => "left");
 * controller.abort();
 * assert.equal(await waiting, "left");
 * ```
 */
export async function settleUnlessAborted<T>(
  work: T | PromiseLike<T>,
  signal: AbortSignal | undefined,
  aborted: () => T,
): Promise<T> {
  if (signal === undefined) return await work;
  let stopWaiting = (): void => {};
  // Once work has won, this never settles, and nothing holds it.
  const ended = new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else stopWaiting = whenAborted(signal, resolve);
  }).then(aborted);
  try {
    return await Promise.race([work, ended]);
  } finally {
    stopWaiting();
  }
}

/** The waits on one signal, and the one listener that ends them. */
interface SignalWaits {
  callbacks: Set<() => void>;
  relay: () => void;
}

const WAITS_BY_SIGNAL = new WeakMap<AbortSignal, SignalWaits>();

/**
 * Calls `callback` once `signal` aborts, until the returned function is
 * called. Every wait on one signal shares one listener: a prefetch waits on
 * its caller's signal once per module at once, and Node warns of a
 * possible leak (`MaxListenersExceededWarning`) past 10 listeners on one
 * signal, where Deno and browsers say nothing.
 *
 * @param signal The signal to wait on; it must not have aborted yet.
 * @param callback What to call once it aborts.
 * @returns Ends the wait, so `callback` is not called; the last wait on a
 * signal to end removes its listener.
 * @example
 * ```ts
 * import { whenAborted } from "./deadline.ts";
 * import assert from "node:assert/strict";
 *
 * const controller = new AbortController();
 * const calls: string[] = [];
 * whenAborted(controller.signal, () => calls.push("a"));
 * const stop = whenAborted(controller.signal, () => calls.push("b"));
 * stop();
 * controller.abort();
 * assert.deepEqual(calls, ["a"]);
 * ```
 */
export function whenAborted(
  signal: AbortSignal,
  callback: () => void,
): () => void {
  let waits = WAITS_BY_SIGNAL.get(signal);
  if (waits === undefined) {
    const callbacks = new Set<() => void>();
    const relay = (): void => {
      WAITS_BY_SIGNAL.delete(signal);
      // `once` took the listener off, but Deno keeps the timer of an
      // AbortSignal.timeout() this signal follows armed until the listener
      // is removed by name: the process would live on to the deadline.
      signal.removeEventListener("abort", relay);
      for (const waiting of callbacks) waiting();
    };
    waits = { callbacks, relay };
    WAITS_BY_SIGNAL.set(signal, waits);
    signal.addEventListener("abort", relay, { once: true });
  }
  const { callbacks, relay } = waits;
  // An entry of its own, so one function passed twice is two waits.
  const wait = (): void => callback();
  callbacks.add(wait);
  return () => {
    callbacks.delete(wait);
    if (callbacks.size > 0 || WAITS_BY_SIGNAL.get(signal) !== waits) return;
    WAITS_BY_SIGNAL.delete(signal);
    signal.removeEventListener("abort", relay);
  };
}

/**
 * Whether an operator's callback answered with a promise or another
 * thenable, to be awaited (and so bounded), rather than with its value:
 * an answer given at once needs no timer and no signal.
 *
 * @param value What the callback returned.
 * @returns `true` for an object or function with a callable `then`.
 * @example
 * ```ts
 * import { isThenable } from "./deadline.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isThenable(Promise.resolve(1)), true);
 * assert.equal(isThenable({ then: () => {} }), true);
 * assert.equal(isThenable(1), false);
 * assert.equal(isThenable(null), false);
 * ```
 */
export function isThenable<T>(
  value: T | PromiseLike<T>,
): value is PromiseLike<T> {
  return (typeof value === "object" || typeof value === "function") &&
    value !== null && typeof (value as { then?: unknown }).then === "function";
}

/**
 * Aborts `target` once `caller` aborts, with an `AbortError` of its own
 * rather than the caller's reason, for a fetch: fetch hands its signal's
 * reason to the body's stream, and on a reason that throws when its
 * prototype is asked for (a revoked Proxy) Deno's streams throw, unhandled,
 * and Node's fetch throws from its connection, uncaught, ending the process.
 *
 * @param caller The caller's signal, not aborted yet, or `undefined`.
 * @param target The controller whose signal the fetch is given.
 * @param what What is fetched, for the reason's message.
 * @returns Stops relaying, once the fetch is over.
 * @example
 * ```ts
 * import { relayAbortToFetch } from "./deadline.ts";
 * import assert from "node:assert/strict";
 *
 * const caller = new AbortController();
 * const fetchAbort = new AbortController();
 * relayAbortToFetch(caller.signal, fetchAbort, "the listing");
 * caller.abort(new Proxy({}, {}));
 * assert.equal(fetchAbort.signal.reason.name, "AbortError");
 * ```
 */
export function relayAbortToFetch(
  caller: AbortSignal | undefined,
  target: AbortController,
  what: string,
): () => void {
  if (caller === undefined) return () => {};
  return whenAborted(caller, () => {
    target.abort(
      new DOMException(`The fetch of ${what} was aborted`, "AbortError"),
    );
  });
}

// This module is browser compatible.

/**
 * The one way host-side code calls an operator's hook whose answer it does
 * not wait for (a log or error sink, a watcher's report) or whose promise
 * it refuses (a hook that must answer at once). A hook written `async`
 * returns a promise, and one that rejects with nobody to handle it ends a
 * Deno process and, by default, a Node one: the host would go down for a
 * log line it could not write.
 *
 * @module
 */

// Captured at import: a hook may replace `Promise.prototype.then` later.
const { then } = Promise.prototype;
const { apply } = Reflect;

function ignore(): void {}

/**
 * Marks a value a hook returned as handled when it is a promise, so its
 * rejection is dropped instead of reported as unhandled. Any other value,
 * a thenable that is not a promise included, is left alone: only a
 * promise can reject unhandled, and no `then` of the value's own runs. Of
 * a promise, the engine reads `constructor` (for its species): one whose
 * `constructor` getter throws cannot be marked, and its rejection stays
 * unhandled.
 *
 * @param value What the hook returned.
 * @example
 * ```ts
 * import { ignoreRejection } from "./hook_calls.ts";
 *
 * // Without it, this rejection would end the process.
 * ignoreRejection(Promise.reject(new Error("log store down")));
 * ignoreRejection({ then: () => {} });
 * ignoreRejection(undefined);
 * ```
 */
export function ignoreRejection(value: unknown): void {
  // Most sinks answer undefined: asking `then` about it would throw, and
  // build a TypeError, on every log line and every delivery request.
  if (typeof value !== "object" || value === null) return;
  try {
    // Promise.prototype.then throws at once, without reading the value,
    // for anything but a promise (of any realm).
    apply(then, value, [undefined, ignore]);
  } catch {
    // Not a promise: it cannot reject unhandled.
  }
}

/**
 * Calls a hook whose answer nobody reads, such as a log or error sink, so
 * that it cannot change the work it hears about: what it throws and what
 * a promise it returns rejects with are dropped, and the promise is not
 * waited for.
 *
 * @param hook The operator's hook, or `undefined` when none was given.
 * @param args What the hook is told.
 * @example
 * ```ts
 * import { callSink } from "./hook_calls.ts";
 * import assert from "node:assert/strict";
 *
 * const seen: string[] = [];
 * callSink((line: string) => seen.push(line), "one");
 * callSink(() => {
 *   throw new Error("sink down");
 * });
 * callSink(async () => {
 *   throw new Error("sink down");
 * });
 * callSink(undefined, "nobody listens");
 * assert.deepEqual(seen, ["one"]);
 * ```
 */
export function callSink<Args extends unknown[]>(
  hook: ((...args: Args) => unknown) | undefined,
  ...args: Args
): void {
  if (hook === undefined) return;
  try {
    ignoreRejection(hook(...args));
  } catch {
    // A failing sink does not change the work it reports.
  }
}

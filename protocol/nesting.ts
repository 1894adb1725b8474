// This module is browser compatible.

/**
 * The one cap on how deeply a value that crosses a realm's edge may nest:
 * a run's context, result and thrown value, console arguments, plugin
 * requests, answers and capability calls.
 *
 * @module
 */

/**
 * The most levels of arrays and objects a value crossing a realm's edge
 * may nest: `[[1]]` is two levels deep, `1` none. Deeper values are
 * refused on every tier alike, with a message naming this cap, instead of
 * meeting whichever engine's stack gives out first: QuickJS's, with the
 * default `maxStackSizeBytes`, at about 800 levels of a result on Deno,
 * and on a Chromium Web Worker, where the pool caps a run's stack to the
 * thread's, at 450 to 510 levels, varying from run to run. The
 * marshalling inside each realm (`realm/marshal.ts`) keeps its own copy of
 * this number, since it runs as source text there; a test holds the two
 * equal.
 *
 * @example
 * ```ts
 * import { MAX_NESTING_DEPTH } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(MAX_NESTING_DEPTH, 256);
 * ```
 */
export const MAX_NESTING_DEPTH = 256;

/**
 * Makes a check that counts the levels of arrays and objects while
 * `JSON.stringify` writes a value, for a replacer to call with its `this`
 * (the holder) and the value it is given: it answers `false` for a value
 * that would nest deeper than {@linkcode MAX_NESTING_DEPTH} levels, before
 * the engine's stack can give out. `JSON.stringify` writes depth first, so
 * the holder of each entry is one of the containers on the way down to
 * it; a check serves one `JSON.stringify` call.
 *
 * @returns `within(holder, value)`, `true` while `value` stays within the
 * cap.
 *
 * @example
 * ```ts
 * import { countNesting, MAX_NESTING_DEPTH } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * let deep: unknown = [];
 * for (let i = 0; i < MAX_NESTING_DEPTH; i++) deep = [deep];
 * const within = countNesting();
 * assert.throws(
 *   () =>
 *     JSON.stringify(deep, function (_key, value) {
 *       if (!within(this, value)) throw new RangeError("too deep");
 *       return value;
 *     }),
 *   /too deep/,
 * );
 * ```
 */
export function countNesting(): (holder: unknown, value: unknown) => boolean {
  const containers: unknown[] = [];
  return (holder, value) => {
    if (typeof value !== "object" || value === null) return true;
    let level = containers.length;
    while (level > 0 && containers[level - 1] !== holder) level--;
    if (level === MAX_NESTING_DEPTH) return false;
    containers.length = level;
    containers.push(value);
    return true;
  };
}

// This module is browser compatible.

/**
 * The one rule for a run's `context`, the JSON data a guest's
 * default-exported function is called with, on every tier: what
 * `JSON.stringify` writes, except that a function, a symbol or a BigInt
 * anywhere in it is refused instead of being dropped silently, so the guest
 * never sees less than the caller passed.
 *
 * @module
 */

import { countNesting, MAX_NESTING_DEPTH } from "./nesting.ts";

/** A value `JSON.stringify` would drop or cannot write. */
class NotJsonData extends TypeError {}

/**
 * A replacer that refuses what is not data and counts levels as
 * `JSON.stringify` writes them, so a context deeper than the cap is
 * refused before the engine's stack can give out.
 */
function dataOnly(): (this: unknown, key: string, value: unknown) => unknown {
  const within = countNesting();
  return function (this: unknown, _key: string, value: unknown): unknown {
    const type = typeof value;
    if (type === "function" || type === "symbol" || type === "bigint") {
      throw new NotJsonData(
        `it holds a ${type === "bigint" ? "BigInt" : type}`,
      );
    }
    if (!within(this, value)) {
      throw new NotJsonData(
        `it is nested deeper than ${MAX_NESTING_DEPTH} levels; pass flatter data`,
      );
    }
    return value;
  };
}

function reasonOf(error: unknown): string {
  if (error instanceof NotJsonData) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  return `writing it failed: ${message.split("\n", 1)[0]}`;
}

/**
 * The JSON text of a run's context, or `undefined` when there is none.
 * Cycles, values nested deeper than {@linkcode MAX_NESTING_DEPTH} levels,
 * functions, symbols and BigInts are refused; `toJSON` methods (a `Date`'s) run as
 * `JSON.stringify` runs them, and `NaN` and infinities become `null`.
 *
 * @param where What was being done, for messages: `"run the declaration"`.
 * @param context The context given, or `undefined`.
 * @returns The JSON text, or `undefined` for `undefined`.
 * @throws {TypeError} When the context is not JSON data; the message names
 * why.
 *
 * @example
 * ```ts
 * import { contextJson } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(contextJson("run the guest", { a: [1, "b"] }), '{"a":[1,"b"]}');
 * assert.equal(contextJson("run the guest", undefined), undefined);
 * assert.throws(
 *   () => contextJson("run the guest", { callback() {} }),
 *   /Cannot run the guest: context must be JSON data, but it holds a function/,
 * );
 * ```
 */
export function contextJson(
  where: string,
  context: unknown,
): string | undefined {
  if (context === undefined) return undefined;
  try {
    // Never undefined: a top-level function or symbol is refused above.
    return JSON.stringify(context, dataOnly());
  } catch (error) {
    throw new TypeError(
      `Cannot ${where}: context must be JSON data, but ${reasonOf(error)}`,
      { cause: error },
    );
  }
}

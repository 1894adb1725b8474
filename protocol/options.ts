// This module is browser compatible.

/**
 * The one rule for integer options (limits, sizes, counts): missing gives
 * the default, a value of the wrong type is a `TypeError`, and a value that
 * is not an integer in range is a `RangeError`, each with a message that
 * names the option, its range and its unit.
 *
 * @module
 */

/**
 * The longest delay timers (`setTimeout`, `AbortSignal.timeout`) honour, in
 * milliseconds: the upper bound of every time limit.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * The largest V8 heap cap a sandbox accepts, in bytes (64 GiB): the bound of
 * `memoryLimitBytes` on the worker and process tiers and of a `node:vm`
 * realm.
 */
export const MAX_V8_HEAP_BYTES = 64 * 1024 * 1024 * 1024;

/**
 * The largest memory limit of a QuickJS engine, in bytes (2 GiB - 1): the
 * most its 32-bit WebAssembly build can address and count, on the loader
 * and in the vm tier's QuickJS realm.
 */
export const MAX_QUICKJS_MEMORY_BYTES = 2 * 1024 * 1024 * 1024 - 1;

/** The range, and optionally the unit, of an integer option. */
export interface IntegerRange {
  /** The smallest value allowed. */
  readonly min: number;
  /** The largest value allowed. */
  readonly max: number;
  /** The unit, such as `"milliseconds"` or `"bytes"`; none for a count. */
  readonly unit?: string;
}

/**
 * Reads an integer option.
 *
 * @param where What was being done, for messages: `"create the QuickJS pool"`.
 * @param name The option's name.
 * @param value The value given, or `undefined`.
 * @param fallback The value when none was given.
 * @param range The values allowed.
 * @returns The value, or `fallback`.
 * @throws {TypeError} When `value` is given and is not a number.
 * @throws {RangeError} When `value` is not an integer in `range`.
 *
 * @example
 * ```ts
 * import { readIntegerOption } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const range = { min: 1, max: 64 };
 * assert.equal(readIntegerOption("create a pool", "size", undefined, 2, range), 2);
 * assert.equal(readIntegerOption("create a pool", "size", 4, 2, range), 4);
 * assert.throws(
 *   () => readIntegerOption("create a pool", "size", 0, 2, range),
 *   /Cannot create a pool: size must be an integer from 1 to 64/,
 * );
 * ```
 */
export function readIntegerOption(
  where: string,
  name: string,
  value: unknown,
  fallback: number,
  range: IntegerRange,
): number {
  if (value === undefined) return fallback;
  const unit = range.unit === undefined ? "" : ` ${range.unit}`;
  if (typeof value !== "number") {
    throw new TypeError(
      `Cannot ${where}: ${name} must be a number${
        range.unit === undefined ? "" : ` of ${range.unit}`
      }`,
    );
  }
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw new RangeError(
      `Cannot ${where}: ${name} must be an integer from ${range.min} to ${range.max}${unit}`,
    );
  }
  return value;
}

// This module is browser compatible.

/**
 * Default limits of the QuickJS loader and the checks of limit options.
 *
 * @module
 */

import {
  type IntegerRange,
  MAX_QUICKJS_MEMORY_BYTES,
  type OptionKeys,
  readIntegerOption,
  TIMEOUT_MS_RANGE,
} from "../protocol/options.ts";
import {
  DEFAULT_MAX_LOG_BYTES,
  MAX_LOG_BYTES,
} from "../protocol/run_result.ts";

/** The limits of one run. */
export interface RunLimits {
  timeoutMs: number;
  memoryLimitBytes: number;
  maxStackSizeBytes: number;
  maxLogBytes: number;
}

/** The default limits of a run. */
export const DEFAULT_LIMITS: Readonly<RunLimits> = Object.freeze({
  timeoutMs: 5_000,
  memoryLimitBytes: 64 * 1024 * 1024,
  maxStackSizeBytes: 256 * 1024,
  maxLogBytes: DEFAULT_MAX_LOG_BYTES,
});

/** The names of the limit options, as `readOptions` takes them. */
export const LIMIT_KEYS: OptionKeys<RunLimits> = Object.freeze({
  timeoutMs: true,
  memoryLimitBytes: true,
  maxStackSizeBytes: true,
  maxLogBytes: true,
});

/** The largest stack limit a run may ask for, in bytes. */
export const MAX_STACK_SIZE_BYTES = 4 * 1024 * 1024;

const BOUNDS: Readonly<Record<keyof RunLimits, IntegerRange>> = Object.freeze({
  timeoutMs: TIMEOUT_MS_RANGE,
  memoryLimitBytes: {
    min: 1024 * 1024,
    max: MAX_QUICKJS_MEMORY_BYTES,
    unit: "bytes",
  },
  maxStackSizeBytes: {
    min: 32 * 1024,
    max: MAX_STACK_SIZE_BYTES,
    unit: "bytes",
  },
  maxLogBytes: { min: 0, max: MAX_LOG_BYTES, unit: "bytes" },
});

/**
 * Reads the limit options of `where`, falling back to `base`.
 *
 * @throws {TypeError} When a limit is not a number.
 * @throws {RangeError} When a limit is not an integer in its range.
 */
export function readLimits(
  where: string,
  options: Partial<Record<keyof RunLimits, unknown>>,
  base: Readonly<RunLimits>,
): RunLimits {
  const out = { ...base };
  for (const key of Object.keys(BOUNDS) as (keyof RunLimits)[]) {
    out[key] = readIntegerOption(
      where,
      key,
      options[key],
      out[key],
      BOUNDS[key],
    );
  }
  return out;
}

// This module is browser compatible.

/**
 * The one check of `prefetch()`'s options, shared by the remote and staged
 * catalogs.
 *
 * @module
 */

import { readOptions } from "../protocol/options.ts";
import type { PrefetchOptions } from "./types.ts";

/**
 * Reads `prefetch()`'s options once and returns its signal.
 *
 * @throws {TypeError} When a key is unknown or the signal is not an
 * AbortSignal.
 */
export function readPrefetchSignal(
  options: PrefetchOptions | undefined,
): AbortSignal | undefined {
  const where = "prefetch the declaration";
  const { signal } = readOptions(where, options, { signal: true });
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`Cannot ${where}: signal must be an AbortSignal`);
  }
  return signal;
}

// This module is browser compatible.

/**
 * The one check of `prefetch()`'s options, shared by the remote and staged
 * catalogs, and of the remote catalog's `authorizeDelivery()` options.
 *
 * @module
 */

import { readOptions } from "../protocol/options.ts";
import type { AuthorizeDeliveryOptions, PrefetchOptions } from "./types.ts";

/**
 * Reads `prefetch()`'s options once and returns its signal.
 *
 * @throws {TypeError} When a key is unknown or the signal is not an
 * AbortSignal.
 */
export function readPrefetchSignal(
  options: PrefetchOptions | undefined,
): AbortSignal | undefined {
  return readSignalOption("prefetch the declaration", options);
}

/**
 * Reads `authorizeDelivery()`'s options once and returns its signal.
 *
 * @throws {TypeError} When a key is unknown or the signal is not an
 * AbortSignal.
 */
export function readDeliverySignal(
  options: AuthorizeDeliveryOptions | undefined,
): AbortSignal | undefined {
  return readSignalOption("deliver the module", options);
}

/** The signal of options that hold only a signal. */
function readSignalOption(
  where: string,
  options: { signal?: AbortSignal } | undefined,
): AbortSignal | undefined {
  const { signal } = readOptions(where, options, { signal: true });
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`Cannot ${where}: signal must be an AbortSignal`);
  }
  return signal;
}

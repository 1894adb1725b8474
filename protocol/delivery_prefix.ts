// This module is browser compatible.

/**
 * The delivery routes' prefix rule, shared by the server that answers under
 * a prefix and the remote catalog that asks under one.
 *
 * @module
 */

/** The default route prefix of `createDeliveryHandler` and the remote catalog. */
export const DEFAULT_DELIVERY_PREFIX = "/api/sandbox-modules";

const PREFIX_PATTERN = /^(?:\/[^?#\s]*[^/?#\s])?$/;

/** What a valid prefix looks like, for the errors that refuse one. */
export const DELIVERY_PREFIX_RULE =
  'prefix must be empty or start with "/" and not end with "/", without "?", "#" or spaces';

/** Whether `prefix` may head the delivery routes (see {@linkcode DELIVERY_PREFIX_RULE}). */
export function isDeliveryPrefix(prefix: unknown): prefix is string {
  return typeof prefix === "string" && PREFIX_PATTERN.test(prefix);
}

// This module is browser compatible.

/**
 * The key a bound shared out by requester counts one requester under.
 *
 * @module
 */

/**
 * The key of one requester, by its principal and tenant ids: two
 * principals of one tenant are two requesters, and every caller with
 * neither id shares one key. An absent id reads as `null`, which no id (a
 * string) quotes to, so no pair of ids can pass for another.
 *
 * @param principalId The principal id, or `null`/`undefined` for none.
 * @param tenantId The tenant id, or `null`/`undefined` for none.
 * @returns A string that is equal for equal ids only.
 * @example
 * ```ts
 * import { requesterKey } from "./requester_key.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(requesterKey("ada", "acme"), requesterKey("ada", "acme"));
 * assert.notEqual(requesterKey("ada", null), requesterKey(null, "ada"));
 * assert.equal(requesterKey(undefined, null), requesterKey(null, null));
 * ```
 */
export function requesterKey(
  principalId: string | null | undefined,
  tenantId: string | null | undefined,
): string {
  return JSON.stringify([principalId ?? null, tenantId ?? null]);
}

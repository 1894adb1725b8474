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

/**
 * How many of something each requester has (runs waiting, requests in
 * flight), by {@linkcode requesterKey}. A key is kept only while its count
 * is above zero: a count for every requester ever seen would grow for ever.
 *
 * @example
 * ```ts
 * import { CountsByRequester } from "./requester_key.ts";
 * import assert from "node:assert/strict";
 *
 * const counts = new CountsByRequester();
 * counts.add("a", 1);
 * counts.add("a", 1);
 * counts.add("a", -1);
 * counts.add("b", 1);
 * assert.equal(counts.of("a"), 1);
 * assert.equal(counts.of("c"), 0);
 * assert.equal(counts.total, 2);
 * ```
 */
export class CountsByRequester {
  readonly #counts = new Map<string, number>();
  #total = 0;

  /** The counts of every key together. */
  get total(): number {
    return this.#total;
  }

  /** The count of `key`: 0 for a key not counted. */
  of(key: string): number {
    return this.#counts.get(key) ?? 0;
  }

  /** Adds `change` to the count of `key`, dropping the key at zero. */
  add(key: string, change: 1 | -1): void {
    this.#total += change;
    const count = this.of(key) + change;
    if (count === 0) this.#counts.delete(key);
    else this.#counts.set(key, count);
  }
}

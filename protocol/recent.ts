// This module is browser compatible.

/**
 * Keeps `value` under `key` as the newest entry of `map`, a `Map` held in
 * order of use (oldest first), and drops the oldest entries past `max`.
 * The bounded caches of the catalogs, the delivery listing and the
 * loader's guest plans are all such maps.
 *
 * @param map The map, oldest entry first.
 * @param key The entry's key.
 * @param value The entry's value.
 * @param max The most entries the map keeps.
 *
 * @example
 * ```ts
 * import { keepRecent } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const seen = new Map<string, number>();
 * keepRecent(seen, "a", 1, 2);
 * keepRecent(seen, "b", 2, 2);
 * keepRecent(seen, "a", 1, 2); // a is the newest again
 * keepRecent(seen, "c", 3, 2); // b, the oldest, goes
 * assert.deepEqual([...seen.keys()], ["a", "c"]);
 * ```
 */
export function keepRecent<K, V>(
  map: Map<K, V>,
  key: K,
  value: V,
  max: number,
): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value as K);
}

// This module is browser compatible.

import { readIntegerOption, readOptions } from "./options.ts";

/** Options of {@linkcode RecentMap}. */
export interface RecentMapOptions<V> {
  /** The most entries kept; the least recently used go first. */
  maxEntries: number;
  /**
   * The most bytes the values kept may hold together, as `sizeOf` counts
   * them; the least recently used go first, and a value larger than this
   * is not kept. Given together with `sizeOf`; without them, only
   * `maxEntries` bounds the map.
   */
  maxBytes?: number;
  /**
   * The bytes a value holds, a whole number from 0 up (anything else is
   * a `TypeError` when the value is set). It is asked again when the value
   * leaves, so it must give the same answer for the same value every
   * time. Given together with `maxBytes`.
   */
  sizeOf?: (value: V) => number;
}

const WHERE = "create a RecentMap";
const KNOWN_OPTIONS = {
  maxEntries: true,
  maxBytes: true,
  sizeOf: true,
} as const;
const NO_KEY: unique symbol = Symbol("no key");
const noSize = () => 0;

/**
 * A map that keeps the entries used most recently within a count and,
 * optionally, a total size in bytes, dropping the least recently used
 * first. Reading an entry with `get` marks it as used. The bounded caches
 * of the catalogs, the delivery listing and the loader's guest plans are
 * each one of these.
 *
 * The entry used last is left in place when it is used again: moving it
 * to the end of the underlying `Map` once more would copy the map's
 * table, and in a cache read run after run those copies outlive V8's
 * young generation.
 *
 * @typeParam K The keys, compared as a `Map` compares them.
 * @typeParam V The values.
 *
 * @example
 * ```ts
 * import { RecentMap } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const seen = new RecentMap<string, number>({ maxEntries: 2 });
 * seen.set("a", 1);
 * seen.set("b", 2);
 * assert.equal(seen.get("a"), 1); // a is the newest now
 * seen.set("c", 3); // b, the least recently used, goes
 * assert.equal(seen.get("b"), undefined);
 * assert.equal(seen.size, 2);
 *
 * const sources = new RecentMap<string, string>({
 *   maxEntries: 100,
 *   maxBytes: 8,
 *   sizeOf: (source) => source.length,
 * });
 * sources.set("x", "12345");
 * sources.set("y", "6789"); // 9 bytes in all: x goes
 * assert.equal(sources.get("x"), undefined);
 * sources.set("z", "123456789"); // larger than maxBytes: not kept
 * assert.equal(sources.get("z"), undefined);
 * assert.equal(sources.get("y"), "6789");
 * ```
 */
export class RecentMap<K, V> {
  readonly #entries = new Map<K, V>();
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  readonly #sizeOf: (value: V) => number;
  #bytes = 0;
  /** The key at the end of `#entries`, or `NO_KEY` when it is not known. */
  #newest: K | typeof NO_KEY = NO_KEY;

  /**
   * Creates an empty map.
   *
   * @param options The bounds, and how to count a value's bytes.
   * @throws {TypeError} When an option is unknown or of the wrong type, or
   * when only one of `maxBytes` and `sizeOf` is given.
   * @throws {RangeError} When `maxEntries` or `maxBytes` is not a positive
   * integer.
   */
  constructor(options: RecentMapOptions<V>) {
    const read = readOptions(WHERE, options, KNOWN_OPTIONS);
    const range = { min: 1, max: Number.MAX_SAFE_INTEGER };
    if (read.maxEntries === undefined) {
      throw new TypeError(`Cannot ${WHERE}: maxEntries is required`);
    }
    this.#maxEntries = readIntegerOption(
      WHERE,
      "maxEntries",
      read.maxEntries,
      0,
      { ...range, unit: "entries" },
    );
    if ((read.maxBytes === undefined) !== (read.sizeOf === undefined)) {
      throw new TypeError(
        `Cannot ${WHERE}: maxBytes and sizeOf go together; give both or neither`,
      );
    }
    if (read.sizeOf !== undefined && typeof read.sizeOf !== "function") {
      throw new TypeError(`Cannot ${WHERE}: sizeOf must be a function`);
    }
    this.#maxBytes = readIntegerOption(
      WHERE,
      "maxBytes",
      read.maxBytes,
      Infinity,
      { ...range, unit: "bytes" },
    );
    this.#sizeOf = read.sizeOf ?? noSize;
  }

  /** The bytes of the entries kept, as `sizeOf` counts them (0 without it). */
  get bytes(): number {
    return this.#bytes;
  }

  /** How many entries are kept. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The value kept under `key`, which now counts as the most recently used.
   *
   * @param key The entry's key.
   * @returns The value, or `undefined` when none is kept.
   */
  get(key: K): V | undefined {
    const entries = this.#entries;
    const value = entries.get(key);
    if (key !== this.#newest && (value !== undefined || entries.has(key))) {
      entries.delete(key);
      entries.set(key, value as V);
      this.#newest = key;
    }
    return value;
  }

  /**
   * Keeps `value` under `key` as the most recently used entry, and drops
   * the least recently used past the bounds. A value larger than
   * `maxBytes` is not kept, and the value it replaces goes.
   *
   * @param key The entry's key.
   * @param value The value to keep.
   */
  set(key: K, value: V): void {
    const size = this.#sizeOf(value);
    // A size that is not a count would corrupt the total every bound reads.
    if (!Number.isSafeInteger(size) || size < 0) {
      throw new TypeError(
        `Cannot keep a value in a RecentMap: sizeOf gave ${
          String(size)
        }, not a whole number of bytes from 0 up`,
      );
    }
    if (size > this.#maxBytes) {
      this.delete(key);
      return;
    }
    const entries = this.#entries;
    if (key === this.#newest) {
      // Already at the end: the new value takes the old one's place.
      this.#bytes -= this.#sizeOf(entries.get(key) as V);
      this.#dropOldest(entries.size, size);
    } else {
      this.delete(key);
      this.#dropOldest(entries.size + 1, size);
    }
    entries.set(key, value);
    this.#newest = key;
    this.#bytes += size;
  }

  /**
   * Drops the entry under `key`.
   *
   * @param key The entry's key.
   * @returns Whether an entry was kept under `key`.
   */
  delete(key: K): boolean {
    const entries = this.#entries;
    if (!entries.has(key)) return false;
    this.#bytes -= this.#sizeOf(entries.get(key) as V);
    entries.delete(key);
    if (key === this.#newest) this.#newest = NO_KEY;
    return true;
  }

  /** Drops every entry. */
  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
    this.#newest = NO_KEY;
  }

  /**
   * Drops the least recently used entries until `count` entries holding
   * `size` more bytes than those kept fit the bounds.
   */
  #dropOldest(count: number, size: number): void {
    const entries = this.#entries;
    for (const [key, value] of entries) {
      if (count <= this.#maxEntries && this.#bytes + size <= this.#maxBytes) {
        return;
      }
      entries.delete(key);
      this.#bytes -= this.#sizeOf(value);
      count--;
    }
  }
}

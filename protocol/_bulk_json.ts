// This module is browser compatible.

/**
 * What `JSON.stringify` writes for the objects whose text is out of
 * proportion to the walk that counts it: a typed array, whose entries the
 * engine lists as one string key each before any replacer sees the first
 * (a 100 MB `Uint8Array` took 37 s and 4.8 GB to refuse under a 4 MiB
 * bound), and a `String` object, written as its whole text without any
 * replacer seeing it. Found by built-ins that check internal slots, so no
 * getter or Proxy trap runs.
 *
 * @module
 */

const { apply, getOwnPropertyDescriptor, getPrototypeOf } = Reflect;

/** The getter of `%TypedArray%.prototype.length`; throws for others. */
const typedArrayLength = getOwnPropertyDescriptor(
  getPrototypeOf(Uint8Array.prototype)!,
  "length",
)!.get!;

/** `String.prototype.valueOf`; throws unless given a string or `String`. */
const stringValueOf = String.prototype.valueOf;

/** Each typed array entry `"i":d` and its comma take six characters. */
const LEAST_CHARS_PER_ENTRY = 6;

/**
 * The least number of characters `JSON.stringify` writes for the entries
 * of a typed array, `0` for anything else. A replacer still sees each
 * entry after this, so it is a look ahead, not a count to add.
 *
 * @param value Any value.
 * @returns The least number of characters.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { typedArrayJsonChars } from "./_bulk_json.ts";
 *
 * assert.equal(typedArrayJsonChars(new Uint8Array(10)), 60);
 * assert.equal(typedArrayJsonChars([1, 2]), 0);
 * ```
 */
export function typedArrayJsonChars(value: unknown): number {
  if (!ArrayBuffer.isView(value)) return 0;
  try {
    return LEAST_CHARS_PER_ENTRY * apply(typedArrayLength, value, []);
  } catch {
    // A DataView: written as {}.
    return 0;
  }
}

/**
 * The least number of characters `JSON.stringify` writes for a `String`
 * object, its text and quotes, past the one a count gives every object;
 * `0` for anything else. No replacer sees its text, so this adds to a
 * count.
 *
 * @param value Any value.
 * @returns The least number of characters.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stringObjectJsonChars } from "./_bulk_json.ts";
 *
 * // "abc" is five characters, one of them counted for the object.
 * assert.equal(stringObjectJsonChars(new String("abc")), 4);
 * assert.equal(stringObjectJsonChars("abc"), 0);
 * ```
 */
export function stringObjectJsonChars(value: unknown): number {
  if (typeof value !== "object" || value === null) return 0;
  try {
    return (apply(stringValueOf, value, []) as string).length + 1;
  } catch {
    return 0;
  }
}

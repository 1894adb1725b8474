/**
 * Variants of a valid wire value, for tests that hold a check compiled
 * from a JSON Schema to the zod schema it was written from: each variant
 * has one part replaced, removed or added.
 *
 * @module
 */

/**
 * Every variant of `value` with one part replaced by one of `substitutes`,
 * removed, or added (a repeated item, an extra key, a `__proto__` key).
 */
export function* variants(
  value: unknown,
  substitutes: readonly unknown[],
): Generator<unknown> {
  yield* substitutes;
  if (Array.isArray(value)) {
    yield [...value, value[0]];
    yield value.slice(0, -1);
    for (let i = 0; i < value.length; i++) {
      for (const inner of variants(value[i], substitutes)) {
        yield value.map((item, j) => (j === i ? inner : item));
      }
    }
  } else if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    yield { ...record, extra: 1 };
    yield JSON.parse(`{"__proto__": {"polluted": true}, "folder": "x"}`);
    for (const key of Object.keys(record)) {
      const { [key]: _removed, ...rest } = record;
      yield rest;
      for (const inner of variants(record[key], substitutes)) {
        yield { ...record, [key]: inner };
      }
    }
  }
}

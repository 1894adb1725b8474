// This module is browser compatible.

/**
 * Reading the fields of an object the host made (a requester, an identity,
 * a checker's answer) as options are read: from the object or a prototype
 * of its own, never from `Object.prototype`. A dependency of the host that
 * merges a JSON body with a `__proto__` key adds keys there, and an object
 * that leaves a field out would otherwise answer the polluted value: a
 * tenant it does not name, a permission it did not give.
 *
 * @module
 */

const { getPrototypeOf, hasOwn } = Object;
const OBJECT_PROTOTYPE: object = Object.prototype;

/**
 * How far down a prototype chain cordon looks for an option
 * (`readOptions`) or a field (`fieldOf`).
 */
export const MAX_OPTIONS_DEPTH = 32;

/**
 * Reads `key` of `value` when the object or a prototype below
 * `Object.prototype` holds it (a getter runs once), and answers
 * `undefined` when only `Object.prototype` does, or none.
 *
 * @example
 * ```ts
 * import { fieldOf } from "./host_fields.ts";
 * import assert from "node:assert/strict";
 *
 * const proto = Object.prototype as Record<string, unknown>;
 * proto.tenantId = "polluted";
 * try {
 *   assert.equal(fieldOf({}, "tenantId"), undefined);
 *   assert.equal(fieldOf({ tenantId: "t1" }, "tenantId"), "t1");
 *   assert.equal(fieldOf(Object.create({ tenantId: "t2" }), "tenantId"), "t2");
 * } finally {
 *   delete proto.tenantId;
 * }
 * ```
 *
 * @param value The object.
 * @param key The field's name.
 * @returns Its value, or `undefined`.
 * @throws What reading the field or a prototype throws (a Proxy, a getter).
 */
export function fieldOf(value: object, key: string): unknown {
  let level: object | null = value;
  for (let depth = 0; depth < MAX_OPTIONS_DEPTH; depth++) {
    if (level === null || level === OBJECT_PROTOTYPE) return undefined;
    if (hasOwn(level, key)) return (value as Record<string, unknown>)[key];
    level = getPrototypeOf(level);
  }
  return undefined;
}

/**
 * Whether `value` holds `key` as its own property: the `in` test of a
 * union's member that a key on `Object.prototype` cannot answer `true`
 * for, so a failure is not read as a success, nor a success as a failure,
 * when a dependency of the host added the key there.
 *
 * @example
 * ```ts
 * import { hasOwnKey } from "./host_fields.ts";
 * import assert from "node:assert/strict";
 *
 * type Answer = { value: number } | { code: string };
 * const failed: Answer = { code: "TIMEOUT" };
 * assert.equal(hasOwnKey(failed, "value"), false);
 * ```
 *
 * @param value The object.
 * @param key The key.
 * @returns `true` when the object itself holds the key.
 */
export function hasOwnKey<T extends object, K extends string>(
  value: T,
  key: K,
): value is Extract<T, Record<K, unknown>> {
  return hasOwn(value, key);
}

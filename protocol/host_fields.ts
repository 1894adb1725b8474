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

import type { Requester } from "./delivery.ts";

const { create, freeze, getPrototypeOf, hasOwn } = Object;
const OBJECT_PROTOTYPE: object = Object.prototype;

/** How far down a prototype chain a field is looked for. */
const MAX_FIELD_DEPTH = 32;

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
  for (let depth = 0; depth < MAX_FIELD_DEPTH; depth++) {
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

/**
 * The requester of a caller that names none: no principal and no tenant,
 * whatever keys `Object.prototype` gains.
 */
export const ANONYMOUS_REQUESTER: Requester = freeze(create(null));

/**
 * A copy of a requester with a `null` prototype and only the ids it holds,
 * read once each with {@linkcode fieldOf}: the copy an entitlement policy
 * is given, so it reads no principal or tenant from `Object.prototype`,
 * and no getter answers it one id and the check another. A new copy per
 * call, left unfrozen: freezing it cost more than the rest of a copy.
 *
 * @example
 * ```ts
 * import { snapshotRequester } from "./host_fields.ts";
 * import assert from "node:assert/strict";
 *
 * const copy = snapshotRequester({ tenantId: "t1" });
 * assert.equal(copy.tenantId, "t1");
 * assert.equal(Object.hasOwn(copy, "principalId"), false);
 * assert.equal(Object.getPrototypeOf(copy), null);
 * ```
 *
 * @param requester The requester given.
 * @returns The copy.
 * @throws What reading a field throws.
 */
export function snapshotRequester(requester: Requester): Requester {
  const principalId = fieldOf(requester, "principalId");
  const tenantId = fieldOf(requester, "tenantId");
  if (principalId === undefined && tenantId === undefined) {
    return ANONYMOUS_REQUESTER;
  }
  const copy: Record<string, unknown> = create(null);
  if (principalId !== undefined) copy.principalId = principalId;
  if (tenantId !== undefined) copy.tenantId = tenantId;
  return copy as Requester;
}

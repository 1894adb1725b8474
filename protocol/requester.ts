// This module is browser compatible.

/**
 * The one reading of a requester a caller hands cordon (a run's
 * `requester`, the one a remote catalog speaks for) and the one test of
 * whether two requesters are the same, so every place that decides per
 * requester reads and compares them alike.
 *
 * @module
 */

import type { Requester } from "./delivery.ts";
import { readOptions } from "./options.ts";
import { fieldOf } from "./host_fields.ts";

const { create, freeze } = Object;

const REQUESTER_KEYS = { principalId: true, tenantId: true } as const;

/**
 * Reads a requester once: its `principalId` and `tenantId`, each a string
 * or absent, into a new frozen object with no prototype, so a getter read
 * again later cannot name someone else, nor can an id a dependency put on
 * `Object.prototype`.
 *
 * @param where What was being done, for the message: `"run the declaration"`.
 * @param value The requester, or `undefined` for none.
 * @param name The option's name, for the message.
 * @returns A frozen copy of the requester with a `null` prototype, or
 * `undefined` when none was given.
 * @throws {TypeError} When it is no object, has another key, or an id is
 * not a string.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readRequester } from "./requester.ts";
 *
 * assert.equal(readRequester("run", { tenantId: "t1" })?.tenantId, "t1");
 * assert.equal(readRequester("run", undefined), undefined);
 * assert.throws(() => readRequester("run", { tenantId: 1 }), TypeError);
 * ```
 */
export function readRequester(
  where: string,
  value: unknown,
  name = "requester",
): Requester | undefined {
  if (value === undefined) return undefined;
  const fields = readOptions(where, value as Requester, REQUESTER_KEYS, name);
  if (!hasStringIds(fields)) {
    throw new TypeError(
      `Cannot ${where}: ${name} must be { principalId?, tenantId? } with string values`,
    );
  }
  // The snapshot itself: a copy with a prototype would answer an id the
  // caller left out from a polluted Object.prototype.
  return fields;
}

/**
 * Whether each id a requester holds is absent or a string: the one rule for
 * a run's requester and a `requester` hook's answer, so no policy is asked
 * about a tenant id of another type, which it could read as anyone.
 *
 * @param requester A requester as read, own ids only.
 * @returns `true` when `principalId` and `tenantId` are each absent or a
 * string.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hasStringIds } from "./requester.ts";
 *
 * assert.equal(hasStringIds({ tenantId: "t1" }), true);
 * assert.equal(hasStringIds({ tenantId: 1 as unknown as string }), false);
 * ```
 */
export function hasStringIds(requester: Requester): boolean {
  return isId(requester.principalId) && isId(requester.tenantId);
}

function isId(value: unknown): boolean {
  return value === undefined || typeof value === "string";
}

/**
 * Whether two requesters are the same: the same `principalId` and the
 * same `tenantId`, an absent one equal only to an absent one.
 *
 * @param a One requester, as {@linkcode readRequester} read it.
 * @param b The other.
 * @returns `true` when both ids match.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sameRequester } from "./requester.ts";
 *
 * assert.equal(sameRequester({ tenantId: "a" }, { tenantId: "a" }), true);
 * assert.equal(sameRequester({ tenantId: "a" }, {}), false);
 * ```
 */
export function sameRequester(a: Requester, b: Requester): boolean {
  return a.principalId === b.principalId && a.tenantId === b.tenantId;
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
 * import { snapshotRequester } from "./requester.ts";
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

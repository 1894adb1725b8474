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
  const valid = [fields.principalId, fields.tenantId].every((field) =>
    field === undefined || typeof field === "string"
  );
  if (!valid) {
    throw new TypeError(
      `Cannot ${where}: ${name} must be { principalId?, tenantId? } with string values`,
    );
  }
  // The snapshot itself: a copy with a prototype would answer an id the
  // caller left out from a polluted Object.prototype.
  return fields;
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

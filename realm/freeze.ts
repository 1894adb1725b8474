// This module is browser compatible.

/**
 * The intrinsics walk and the freeze: everything reachable from a lockdown's
 * roots through prototypes, data properties and accessors. Runs inside a
 * realm: each function is self-contained, turned into source by
 * `realm/realm_source.ts`.
 *
 * The order is the lockdown's: walk, tame overrides (which adds the new
 * accessors and their originals), walk again from what the taming added,
 * freeze. The global object itself is not frozen: its own properties are
 * locked ({@linkcode lockOwnProperties}), so every tier's global object
 * takes new globals and keeps the realm's.
 *
 * @module
 */

/** Options of {@linkcode walkReachable}. */
export interface WalkOptions {
  /**
   * An object the walk neither adds nor enters (a vm context's global
   * object, which cannot be frozen).
   */
  skip?: object;
  /**
   * How many of `reached`'s first objects a walk already entered, with
   * nothing they reach changed since: a walk again after more objects were
   * added enters only those.
   *
   * @default {0}
   */
  from?: number;
}

/**
 * Adds to `reached` every object reachable from what it holds, breadth
 * first (a `Set` iterates what is added during the iteration).
 *
 * @param reached The roots; grows in place.
 * @param options What to skip, and where to start.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { walkReachable } from "./freeze.ts";
 *
 * const reached = new Set<object>([{ inner: [1] }]);
 * walkReachable(reached);
 * assert.ok(reached.has(Array.prototype));
 * ```
 */
export function walkReachable(
  reached: Set<object>,
  options: WalkOptions = {},
): void {
  const { getPrototypeOf, getOwnPropertyDescriptor } = Object;
  const ownKeys = Reflect.ownKeys;
  const { skip, from = 0 } = options;
  const reach = (value: unknown): void => {
    if (
      ((typeof value === "object" && value !== null) ||
        typeof value === "function") && value !== skip
    ) {
      reached.add(value);
    }
  };
  let index = 0;
  for (const object of reached) {
    if (index++ < from) continue;
    reach(getPrototypeOf(object));
    for (const key of ownKeys(object)) {
      const descriptor = getOwnPropertyDescriptor(object, key)!;
      if ("value" in descriptor) {
        reach(descriptor.value);
      } else {
        reach(descriptor.get);
        reach(descriptor.set);
      }
    }
  }
}

/**
 * Freezes every object in `objects` that is not frozen yet.
 *
 * @param objects What the walk reached.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { freezeAll } from "./freeze.ts";
 *
 * const object = {};
 * freezeAll(new Set([object]));
 * assert.ok(Object.isFrozen(object));
 * ```
 */
export function freezeAll(objects: Iterable<object>): void {
  const { freeze, isFrozen } = Object;
  for (const object of objects) {
    if (!isFrozen(object)) freeze(object);
  }
}

/**
 * Makes every own property of `object` read-only and non-configurable, as
 * `Object.freeze` would, but leaves the object extensible. The lockdown
 * does this to a realm's global object: code may add globals of its own
 * (libraries such as zod 4 keep shared state there), but it cannot
 * replace, redefine or delete the realm's. What a run adds goes with the
 * run: each run starts from the hardened state (QuickJS) or a fresh realm.
 *
 * @param object The global object, or an intrinsic.
 * @param keepWritable A data property that stays writable (still not
 * configurable): `Error.stackTraceLimit`, which code sets and restores.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { lockOwnProperties } from "./freeze.ts";
 *
 * const object: Record<string, unknown> = { kept: 1 };
 * lockOwnProperties(object);
 * assert.throws(() => {
 *   "use strict";
 *   object.kept = 2;
 * }, TypeError);
 * object.added = 3;
 * assert.equal(object.added, 3);
 * ```
 */
export function lockOwnProperties(
  object: object,
  keepWritable?: PropertyKey,
): void {
  const { defineProperty, getOwnPropertyDescriptor } = Object;
  const ownKeys = Reflect.ownKeys;
  for (const key of ownKeys(object)) {
    const descriptor = getOwnPropertyDescriptor(object, key);
    if (descriptor === undefined) continue;
    // Whole descriptors: a vm context's global object forwards each
    // definition to its sandbox object, which must get every field.
    if ("value" in descriptor) {
      if (!descriptor.writable && !descriptor.configurable) continue;
      defineProperty(object, key, {
        value: descriptor.value,
        writable: key === keepWritable && descriptor.writable === true,
        enumerable: descriptor.enumerable,
        configurable: false,
      });
    } else if (descriptor.configurable) {
      defineProperty(object, key, {
        get: descriptor.get,
        set: descriptor.set,
        enumerable: descriptor.enumerable,
        configurable: false,
      });
    }
  }
}

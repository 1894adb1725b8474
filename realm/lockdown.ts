// This module is browser compatible.

/**
 * The lockdown's order, in one place for every realm that is hardened in
 * place (the loader's QuickJS context, a vm plugin's context): the realm
 * functions it calls, the override rule it reads, and the function that
 * calls them in order. A realm gets them through `realm/realm_source.ts`.
 *
 * @module
 */

import { freezeAll, lockOwnProperties, walkReachable } from "./freeze.ts";
import { guardGlobalDefinitions } from "./guard_global_definitions.ts";
import { hiddenIntrinsics } from "./hidden_intrinsics.ts";
import { OVERRIDE_REFUSALS, OVERRIDE_TARGETS } from "./override_targets.ts";
import { type OverrideRule, tameOverrides } from "./tame_overrides.ts";

/** The realm functions {@linkcode lockdownRealm} calls, by name. */
export interface LockdownSteps {
  /** `realm/guard_global_definitions.ts`. */
  guardGlobalDefinitions: typeof guardGlobalDefinitions;
  /** `realm/hidden_intrinsics.ts`. */
  hiddenIntrinsics: typeof hiddenIntrinsics;
  /** `realm/freeze.ts`. */
  walkReachable: typeof walkReachable;
  /** `realm/tame_overrides.ts`. */
  tameOverrides: typeof tameOverrides;
  /** `realm/freeze.ts`. */
  freezeAll: typeof freezeAll;
  /** `realm/freeze.ts`. */
  lockOwnProperties: typeof lockOwnProperties;
  /** {@linkcode lockdownRealm} itself, so one library carries the lot. */
  lockdownRealm: typeof lockdownRealm;
}

/**
 * Locks a realm down, in the order every tier keeps: aliases the global
 * object as `self` and `global` (libraries look for it there before they
 * fall back to `Function("return this")()`, which is denied), guards the
 * definers, walks from the global object, `roots` and the intrinsics only
 * code reaches, tames the overrides, walks again from what the taming
 * added (the new accessors and the originals behind them), locks the
 * global object's own properties and freezes everything else it reached,
 * but for `Error.stackTraceLimit`: `Error` is locked and not extensible,
 * and that number stays writable, as code sets it and restores it around
 * the errors it makes (joi, the hapi libraries). Each run starts from the
 * hardened state (QuickJS) or a fresh realm, so what a run sets goes with
 * it.
 * The global object is entered but not frozen: it takes new globals on
 * every tier. Self-contained: it runs inside the realm it locks, and calls
 * the realm's own copies of the steps.
 *
 * @param steps The realm's copies of {@linkcode LOCKDOWN_STEPS}.
 * @param overrides {@linkcode OVERRIDE_RULE}, as the realm's data.
 * @param global The realm's global object.
 * @param roots More objects to freeze with everything they reach.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import vm from "node:vm";
 * import { realmSource } from "./realm_source.ts";
 * import { LOCKDOWN_STEPS, type LockdownSteps, OVERRIDE_RULE } from "./lockdown.ts";
 * import type { OverrideRule } from "./tame_overrides.ts";
 *
 * function entry(steps: LockdownSteps, data: { overrides: OverrideRule }) {
 *   const table = { nested: {} };
 *   steps.lockdownRealm(steps, data.overrides, globalThis, [table]);
 *   return Object.isFrozen(Array.prototype) && Object.isFrozen(table.nested);
 * }
 * const source = realmSource(entry, { ...LOCKDOWN_STEPS }, {
 *   overrides: OVERRIDE_RULE,
 * });
 * assert.equal(vm.runInNewContext(source)(), true);
 * ```
 */
export function lockdownRealm(
  steps: LockdownSteps,
  overrides: OverrideRule,
  global: object,
  roots: readonly object[],
): void {
  const { defineProperty, hasOwn, preventExtensions } = Object;
  const ErrorCtor = Error;
  for (const name of ["self", "global"]) {
    if (!hasOwn(global, name)) {
      defineProperty(global, name, {
        value: global,
        writable: true,
        enumerable: false,
        configurable: true,
      });
    }
  }
  steps.guardGlobalDefinitions();
  const reached = new Set<object>([
    global,
    ...roots,
    ...steps.hiddenIntrinsics(),
  ]);
  steps.walkReachable(reached, { skip: global });
  reached.delete(global);
  const walked = reached.size;
  steps.tameOverrides(overrides, reached);
  steps.walkReachable(reached, { skip: global, from: walked });
  steps.lockOwnProperties(global);
  if (hasOwn(ErrorCtor, "stackTraceLimit")) {
    reached.delete(ErrorCtor);
    steps.lockOwnProperties(ErrorCtor, "stackTraceLimit");
    preventExtensions(ErrorCtor);
  }
  steps.freezeAll(reached);
}

/** The lockdown's realm functions, for a realm's library. */
export const LOCKDOWN_STEPS: LockdownSteps = Object.freeze({
  guardGlobalDefinitions,
  hiddenIntrinsics,
  walkReachable,
  tameOverrides,
  freezeAll,
  lockOwnProperties,
  lockdownRealm,
});

/** The override rule (`realm/override_targets.ts`) as plain data. */
export const OVERRIDE_RULE: OverrideRule = Object.freeze({
  targets: Object.entries(OVERRIDE_TARGETS),
  refusals: OVERRIDE_REFUSALS,
});

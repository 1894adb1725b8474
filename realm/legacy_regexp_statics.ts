// This module is browser compatible.

/**
 * V8 keeps the last match of a realm on `RegExp` (`input`, `lastMatch`,
 * `$1` to `$9` and the rest: string-keyed accessors, the only ones
 * `RegExp` has), for as long as the realm lives. Code that runs in a
 * realm before or beside the guest (cordon's own, the runtime's, a
 * plugin's dependencies serving an earlier call) leaves what it matched
 * there, so every V8 realm that guest code reaches drops them before that
 * code exists. QuickJS has none of them.
 *
 * @module
 */

import { realmSource } from "./realm_source.ts";

/**
 * Deletes the legacy `RegExp` statics of the realm it runs in. Self-contained,
 * so a realm runs its own copy; harmless where there are none.
 *
 * @throws {Error} When one of them cannot be deleted.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import vm from "node:vm";
 * import { removeLegacyRegExpStatics } from "./legacy_regexp_statics.ts";
 *
 * const context = vm.createContext({});
 * vm.runInContext(`(${removeLegacyRegExpStatics})()`, context);
 * assert.equal(vm.runInContext("/(a)/.exec('a'); 'input' in RegExp || '$1' in RegExp", context), false);
 * ```
 */
export function removeLegacyRegExpStatics(): void {
  const { getOwnPropertyDescriptor, getOwnPropertyNames } = Object;
  const statics = RegExp as unknown as Record<string, unknown>;
  for (const name of getOwnPropertyNames(statics)) {
    if (getOwnPropertyDescriptor(statics, name)!.get === undefined) continue;
    delete statics[name];
    if (name in statics) {
      throw new Error(`Cannot remove RegExp.${name} from a sandbox realm`);
    }
  }
}

function removalEntry(
  library: { removeLegacyRegExpStatics: () => void },
): void {
  library.removeLegacyRegExpStatics();
}

/**
 * The source text of an expression whose value is a function that runs
 * {@linkcode removeLegacyRegExpStatics} in the realm that evaluates it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { REMOVE_LEGACY_REGEXP_STATICS_SOURCE } from "./legacy_regexp_statics.ts";
 *
 * assert.match(REMOVE_LEGACY_REGEXP_STATICS_SOURCE, /removeLegacyRegExpStatics/);
 * ```
 */
export const REMOVE_LEGACY_REGEXP_STATICS_SOURCE: string = realmSource(
  removalEntry,
  { removeLegacyRegExpStatics },
  null,
);

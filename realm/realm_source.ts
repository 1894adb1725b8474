// This module is browser compatible.

/**
 * The one place realm code becomes realm source text. Realm code is written
 * as ordinary, type-checked functions; each is self-contained (it refers to
 * nothing outside its body and captures the intrinsics it uses when it is
 * called), so its `Function.prototype.toString` text means the same inside
 * a realm. {@linkcode realmSource} joins an entry function, the library of
 * functions it calls and the plain data it reads into one expression;
 * {@linkcode realmScripts} gives the same as one script per function, for
 * a realm that evaluates them one by one.
 *
 * @module
 */

/** Functions the entry receives by name; each must be self-contained. */
export type RealmLibrary = Readonly<
  Record<string, (...args: never[]) => unknown>
>;

/** The scripts {@linkcode realmScripts} makes, each strict code. */
export interface RealmScripts {
  /**
   * For each library function, in the library's order: its name, and a
   * script whose value is the realm's own copy of the function.
   */
  readonly library: readonly (readonly [name: string, script: string])[];
  /**
   * A script whose value is a function `bind(library)`, which takes an
   * object holding the library's functions by name and returns
   * `(...args) => entry(library, data, ...args)`.
   */
  readonly bind: string;
}

const { entries, freeze } = Object;
const stringify = JSON.stringify;
const functionText = Function.prototype.toString;
const { apply } = Reflect;

function textOf(fn: (...args: never[]) => unknown): string {
  return apply(functionText, fn, []) as string;
}

/** Each library member's name and the text of an expression of it. */
function memberTexts(library: RealmLibrary): [string, string][] {
  return entries(library).map(([name, fn]) => {
    if (typeof fn !== "function") {
      throw new TypeError(
        `Cannot turn ${name} into realm source: pass a function`,
      );
    }
    return [name, `(${textOf(fn)})`];
  });
}

/** The text of the `bind(library)` function of {@linkcode RealmScripts}. */
function bindText<D>(entry: (...args: never[]) => unknown, data: D): string {
  return `function (library) {
  const data = ${stringify(data)};
  const entry = (${textOf(entry)});
  return function (...args) {
    return entry(library, data, ...args);
  };
}`;
}

/**
 * The source text of an expression that evaluates, in a realm, to a strict
 * function `(...args) => entry(library, data, ...args)`: the realm builds
 * its own copy of every function (from its text) and of the data (from
 * JSON), so everything they make belongs to the realm's intrinsics.
 *
 * @param entry The function the realm calls; it receives the library, the data, then the call's arguments.
 * @param library The self-contained functions the entry calls, by name.
 * @param data Plain JSON data the entry reads.
 * @returns The source of an expression whose value is that function.
 * @throws {TypeError} When a library member is not a function.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { realmSource } from "./realm_source.ts";
 *
 * function double(value: number): number {
 *   return value * 2;
 * }
 * function entry(
 *   library: { double: typeof double },
 *   data: { offset: number },
 *   value: number,
 * ): number {
 *   return library.double(value) + data.offset;
 * }
 * const source = realmSource(entry, { double }, { offset: 1 });
 * assert.equal((0, eval)(source)(20), 41);
 * ```
 */
export function realmSource<L extends RealmLibrary, D, A extends unknown[], R>(
  entry: (library: L, data: D, ...args: A) => R,
  library: L,
  data: D,
): string {
  const members = memberTexts(library).map(([name, text]) =>
    `${stringify(name)}: ${text}`
  );
  return `(function () {
  "use strict";
  const library = {
    ${members.join(",\n    ")}
  };
  return (${bindText(entry, data)})(library);
})()`;
}

/**
 * What {@linkcode realmSource} joins into one expression, as one strict
 * script per library function and one that binds the entry to them. A
 * realm that evaluates them one by one never holds the whole text at once,
 * and can let go of a function the entry no longer needs by deleting it
 * from the library object.
 *
 * @param entry The function the realm calls; it receives the library, the data, then the call's arguments.
 * @param library The self-contained functions the entry calls, by name.
 * @param data Plain JSON data the entry reads.
 * @returns The scripts, frozen.
 * @throws {TypeError} When a library member is not a function.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { realmScripts } from "./realm_source.ts";
 *
 * function double(value: number): number {
 *   return value * 2;
 * }
 * function entry(
 *   library: { double: typeof double },
 *   data: { offset: number },
 *   value: number,
 * ): number {
 *   return library.double(value) + data.offset;
 * }
 * const scripts = realmScripts(entry, { double }, { offset: 1 });
 * const library: Record<string, unknown> = {};
 * for (const [name, script] of scripts.library) {
 *   library[name] = (0, eval)(script);
 * }
 * assert.equal((0, eval)(scripts.bind)(library)(20), 41);
 * ```
 */
export function realmScripts<
  L extends RealmLibrary,
  D,
  A extends unknown[],
  R,
>(
  entry: (library: L, data: D, ...args: A) => R,
  library: L,
  data: D,
): RealmScripts {
  const strict = (text: string) => `"use strict";\n${text}`;
  return freeze({
    library: freeze(
      memberTexts(library).map(([name, text]) =>
        freeze([name, strict(text)] as const)
      ),
    ),
    bind: strict(`(${bindText(entry, data)})`),
  });
}

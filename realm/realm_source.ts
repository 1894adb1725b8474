// This module is browser compatible.

/**
 * The one place realm code becomes realm source text. Realm code is written
 * as ordinary, type-checked functions; each is self-contained (it refers to
 * nothing outside its body and captures the intrinsics it uses when it is
 * called), so its `Function.prototype.toString` text means the same inside
 * a realm. {@linkcode realmSource} joins an entry function, the library of
 * functions it calls and the plain data it reads into one expression.
 *
 * @module
 */

/** Functions the entry receives by name; each must be self-contained. */
export type RealmLibrary = Readonly<
  Record<string, (...args: never[]) => unknown>
>;

const { entries } = Object;
const stringify = JSON.stringify;
const functionText = Function.prototype.toString;
const { apply } = Reflect;

function textOf(fn: (...args: never[]) => unknown): string {
  return apply(functionText, fn, []) as string;
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
  const members: string[] = [];
  for (const [name, fn] of entries(library)) {
    if (typeof fn !== "function") {
      throw new TypeError(
        `Cannot turn ${name} into realm source: pass a function`,
      );
    }
    members.push(`${stringify(name)}: (${textOf(fn)})`);
  }
  return `(function () {
  "use strict";
  const library = {
    ${members.join(",\n    ")}
  };
  const data = ${stringify(data)};
  const entry = (${textOf(entry)});
  return function (...args) {
    return entry(library, data, ...args);
  };
})()`;
}

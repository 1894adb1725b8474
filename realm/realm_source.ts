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

import { CordonError } from "../protocol/cordon_error.ts";

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

/**
 * Realm code in small, which every realm text runs first: the shapes that
 * an app's bundler or coverage tool gives helper calls of its own (a
 * nested function, a class with a private field, an arrow function, a
 * spread; esbuild's keepNames `__name`, istanbul's counters, a
 * transpiler's class helpers). Such a helper is no name of the realm, so
 * realm code changed that way fails here, as the realm starts, with a
 * `ReferenceError` that {@linkcode alteredRealmCode} recognises, and not
 * later in a guest's run or with a wrong result.
 */
function selfContainedProbe(): number {
  function twice(value: number): number {
    return value * 2;
  }
  const Total = class Total {
    #sum = 0;
    add(...values: number[]): number {
      for (const value of values) this.#sum += value;
      return this.#sum;
    }
  };
  const doubled = [1, 2].map((value) => twice(value));
  return new Total().add(...doubled);
}

/** The text of the `bind(library)` function of {@linkcode RealmScripts}. */
function bindText<D>(entry: (...args: never[]) => unknown, data: D): string {
  return `function (library) {
  (${textOf(selfContainedProbe)})();
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

/** The name and message of an error, or of the first error of its causes. */
function referenceError(thrown: unknown): string | null {
  for (let error = thrown, depth = 0; depth < 4; depth++) {
    if (typeof error !== "object" || error === null) return null;
    const { name, message, cause } = error as Record<string, unknown>;
    if (name === "ReferenceError" && typeof message === "string") {
      return message.trim();
    }
    error = cause;
  }
  return null;
}

/**
 * Recognises what starting a realm threw when cordon's realm code was
 * changed by an app's bundler or coverage tool: a `ReferenceError` (the
 * error itself or one of its causes), which cordon's own realm code never
 * throws as a realm starts, since every realm text first runs a probe of
 * the shapes such tools give calls of their own helpers.
 *
 * @param thrown What starting the realm threw, on the host. The error returned does not keep it, which may hold the realm.
 * @param where What was starting, for the message: "start the QuickJS loader".
 * @returns A `REALM_CODE_ALTERED` error that names the missing name and says how to bundle cordon, or `null` for any other failure.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { alteredRealmCode } from "./realm_source.ts";
 *
 * const error = alteredRealmCode(
 *   new ReferenceError("__name is not defined"),
 *   "start the QuickJS loader",
 * );
 * assert.equal(error?.code, "REALM_CODE_ALTERED");
 * assert.equal(alteredRealmCode(new TypeError("x"), "start"), null);
 * ```
 */
export function alteredRealmCode(
  thrown: unknown,
  where: string,
): CordonError | null {
  const detail = referenceError(thrown);
  if (detail === null) return null;
  return new CordonError(
    "REALM_CODE_ALTERED",
    `Cannot ${where}: cordon's realm code, whose text runs inside the realm, calls a name from outside it (${detail}), which the app's bundler or coverage tool added: bundle cordon without keepNames (esbuild --keep-names), and leave node_modules/@cordon/cordon out of coverage instrumentation (babel-plugin-istanbul, Vitest's coverage.provider "istanbul" with it included, Jest's collectCoverageFrom) and of transpilers that add helpers`,
  );
}

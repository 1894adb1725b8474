// This module is browser compatible.

/**
 * The intrinsics no property path from `globalThis` reaches, only code
 * does: the generator and async function prototypes, the iterator
 * prototypes, the iterator helpers' prototypes (`Iterator.concat`'s too),
 * `Intl`'s segments, the iterators of the realm's own `URLSearchParams` and
 * V8's accessor of an error's `stack`. A lockdown adds them to its roots.
 * Runs inside a realm: self-contained, turned into source by
 * `realm/realm_source.ts`.
 *
 * @module
 */

/**
 * The hidden intrinsics this engine has; a feature the engine lacks is
 * skipped. Self-contained: it captures what it uses when called.
 *
 * @returns The objects and functions found, in a fixed order.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hiddenIntrinsics } from "./hidden_intrinsics.ts";
 *
 * assert.ok(hiddenIntrinsics().includes(Object.getPrototypeOf([].values())));
 * ```
 */
export function hiddenIntrinsics(): object[] {
  const { getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const isArray = Array.isArray;
  const SymbolCtor = Symbol;
  const G = globalThis as unknown as {
    Map: MapConstructor;
    Set: SetConstructor;
    Iterator?: { from?(value: unknown): object; concat?(): object };
    Int8Array: Int8ArrayConstructor;
    Error: ErrorConstructor;
    URLSearchParams?: new () => { keys(): object };
    Intl?: {
      Segmenter?: new () => {
        segment(text: string): Iterable<unknown>;
      };
    };
  };
  const found: object[] = [];
  const attempts: (() => unknown)[] = [
    () => getPrototypeOf(function* () {}),
    () => getPrototypeOf(async function () {}),
    () => getPrototypeOf(async function* () {}),
    () => getPrototypeOf([][SymbolCtor.iterator]()),
    () => getPrototypeOf(new G.Map()[SymbolCtor.iterator]()),
    () => getPrototypeOf(new G.Set()[SymbolCtor.iterator]()),
    () => getPrototypeOf(""[SymbolCtor.iterator]()),
    () => getPrototypeOf(/a/[SymbolCtor.matchAll]("")),
    () =>
      getPrototypeOf(
        G.Iterator!.from!({
          next() {
            return { done: true, value: undefined };
          },
        }),
      ),
    // QuickJS gives Iterator.concat's iterators a prototype of their own
    // (V8 gives them the helpers' prototype).
    () => getPrototypeOf(G.Iterator!.concat!()),
    () =>
      getPrototypeOf(
        ([].values() as unknown as {
          map(fn: (item: unknown) => unknown): object;
        }).map((item) => item),
      ),
    () => getPrototypeOf(new G.URLSearchParams!().keys()),
    // %TypedArray% and %ThrowTypeError%: a path reaches them too, but a
    // root keeps them in whatever the walk skips.
    () => getPrototypeOf(G.Int8Array),
    () =>
      getOwnPropertyDescriptor(getPrototypeOf(function () {}), "caller")?.get,
    // V8 gives every error (and every object Error.captureStackTrace
    // writes to) an own stack accessor whose getter and setter the whole
    // realm shares.
    () => {
      const stack = getOwnPropertyDescriptor(new G.Error(), "stack");
      return [stack?.get, stack?.set];
    },
    () => {
      const segments = new G.Intl!.Segmenter!().segment("");
      return [
        getPrototypeOf(segments),
        getPrototypeOf(segments[SymbolCtor.iterator]()),
      ];
    },
  ];
  for (const attempt of attempts) {
    let value: unknown = null;
    try {
      value = attempt();
    } catch {
      // This engine lacks the feature: nothing to add.
    }
    for (const item of isArray(value) ? value : [value]) {
      if (
        (typeof item === "object" && item !== null) ||
        typeof item === "function"
      ) {
        found.push(item);
      }
    }
  }
  return found;
}

// This module is browser compatible.

/**
 * Installs the language built-ins Deno has and QuickJS lacks, where they
 * are pure computation and can follow the standard: `Uint8Array`'s base64
 * and hex methods, `Array.fromAsync`, `Symbol.dispose`,
 * `Symbol.asyncDispose`, `SuppressedError`, `DisposableStack`,
 * `AsyncDisposableStack`, the iterator prototypes' dispose methods, V8's
 * `Error.captureStackTrace` and `Error.stackTraceLimit`, and
 * `Symbol.metadata` with the decorator
 * metadata proposal's `Function.prototype[Symbol.metadata]` (null). A
 * realm whose engine has one (a `node:vm` context) keeps its own. It also
 * replaces built-ins QuickJS gets wrong past its memory's safety, in
 * every realm: `SharedArrayBuffer.prototype.grow`, by one that refuses,
 * the typed arrays' constructors, by proxies that read `new.target`'s
 * prototype first, their `with()`, by one that converts its arguments before
 * the engine's own reads the array, their `sort()`, by one that sorts a
 * list of the elements when it calls the caller's comparison, and the arrays' `toReversed`,
 * `toSorted`, `toSpliced` and `with`, by ones that fill the copy as they
 * read it, `BigInt.asUintN`, by one that answers no negative number, and
 * the iterator helpers' `return`, by one that closes an iterator without a
 * `return` method; in a QuickJS realm it replaces `Date`, `Date.parse` and
 * the local setters, by ones that map local time as the standard does
 * (`realm/es_date.ts`). Runs
 * inside a realm, before its lockdown: self-contained, turned into source
 * by `realm/realm_source.ts`.
 *
 * @module
 */

import { createBase64Methods } from "./es_base64.ts";
import { createDisposal } from "./es_dispose.ts";
import { createLocalTime } from "./es_date.ts";

/** The realm functions {@linkcode installEsBuiltins} calls, by name. */
export interface EsBuiltinsSteps {
  /** {@linkcode createValueText}. */
  createValueText: typeof createValueText;
  /** `realm/es_base64.ts`. */
  createBase64Methods: typeof createBase64Methods;
  /** `realm/es_dispose.ts`. */
  createDisposal: typeof createDisposal;
  /** `realm/es_date.ts`. */
  createLocalTime: typeof createLocalTime;
  /** {@linkcode createFromAsync}. */
  createFromAsync: typeof createFromAsync;
  /** {@linkcode createCaptureStackTrace}. */
  createCaptureStackTrace: typeof createCaptureStackTrace;
  /** {@linkcode createRefusedGrow}. */
  createRefusedGrow: typeof createRefusedGrow;
  /** {@linkcode createTypedArrayWith}. */
  createTypedArrayWith: typeof createTypedArrayWith;
  /** {@linkcode createArrayCopies}. */
  createArrayCopies: typeof createArrayCopies;
  /** {@linkcode createTypedArraySort}. */
  createTypedArraySort: typeof createTypedArraySort;
  /** {@linkcode createTypedArrayConstructor}. */
  createTypedArrayConstructor: typeof createTypedArrayConstructor;
  /** {@linkcode createBigIntAsUintN}. */
  createBigIntAsUintN: typeof createBigIntAsUintN;
  /** {@linkcode createIteratorHelperReturn}. */
  createIteratorHelperReturn: typeof createIteratorHelperReturn;
  /** {@linkcode installEsBuiltins} itself. */
  installEsBuiltins: typeof installEsBuiltins;
}

/**
 * Makes the function that shows a value in an error message as V8 does,
 * without running the value's code: `#<Map>`, `[object Array]`, a
 * function's text. Self-contained.
 *
 * @returns The function.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createValueText } from "./es_builtins.ts";
 *
 * const shown = createValueText();
 * assert.equal(shown(new Map()), "#<Map>");
 * assert.equal(shown([1]), "[object Array]");
 * ```
 */
export function createValueText(): (value: unknown) => string {
  "use strict";
  const { getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const { apply } = Reflect;
  const toText = String;
  const objectToString = Object.prototype.toString;
  const functionText = Function.prototype.toString;
  const typedArrayTag = getOwnPropertyDescriptor(
    getPrototypeOf(Uint8Array.prototype),
    Symbol.toStringTag,
  )!.get!;
  const TAGS = [
    "[object Array]",
    "[object String]",
    "[object Number]",
    "[object Boolean]",
  ];
  // The lockdown turns each intrinsic prototype's constructor into an
  // accessor, which this must not call: their names are read now.
  const names = new WeakMap<object, string>();
  for (const key of Reflect.ownKeys(globalThis)) {
    const value = getOwnPropertyDescriptor(globalThis, key)?.value;
    const proto = typeof value === "function" ? value.prototype : undefined;
    if (typeof proto === "object" && proto !== null && value.name) {
      names.set(proto, value.name);
    }
  }
  return function shown(value: unknown): string {
    if (typeof value === "symbol") return `Symbol(${value.description ?? ""})`;
    if (typeof value === "function") return apply(functionText, value, []);
    if (typeof value !== "object" || value === null) return toText(value);
    // V8 shows every typed array but a Uint8Array so.
    if (apply(typedArrayTag, value, []) !== undefined) return "undefined";
    const tag = apply(objectToString, value, []) as string;
    for (const one of TAGS) if (tag === one) return tag;
    for (let o: object | null = value; o !== null; o = getPrototypeOf(o)) {
      const name = names.get(o);
      if (name !== undefined) return `#<${name}>`;
      const ctor = getOwnPropertyDescriptor(o, "constructor")?.value;
      if (typeof ctor === "function" && ctor.name) return `#<${ctor.name}>`;
    }
    return "[object Object]";
  };
}

/**
 * Makes `Array.fromAsync`: async and sync iterables (each value awaited)
 * and array-likes, an optional mapping function whose result is awaited,
 * and `this` as the constructor of the result when it is one. The iterator
 * is closed when mapping or defining fails. Self-contained.
 *
 * @param shown How a message shows a value ({@linkcode createValueText}).
 * @returns The function, named `fromAsync`, of length 1.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createFromAsync, createValueText } from "./es_builtins.ts";
 *
 * const fromAsync = createFromAsync(createValueText());
 * assert.deepEqual(await fromAsync([1, Promise.resolve(2)]), [1, 2]);
 * ```
 */
export function createFromAsync(
  shown: (value: unknown) => string,
): (items: unknown, mapfn?: unknown, thisArg?: unknown) => Promise<unknown[]> {
  "use strict";
  const { defineProperty } = Object;
  const { apply, construct } = Reflect;
  const TypeErrorCtor = TypeError;
  const ObjectCtor = Object;
  const ArrayCtor = Array;
  const asyncIteratorKey = Symbol.asyncIterator;
  const iteratorKey = Symbol.iterator;

  function isConstructor(value: unknown): boolean {
    if (typeof value !== "function") return false;
    try {
      // Only as new.target: this does not call it.
      construct(ObjectCtor, [], value as new () => object);
      return true;
    } catch {
      return false;
    }
  }

  function methodOf(items: unknown, key: symbol): unknown {
    const method = (items as Record<symbol, unknown>)[key];
    if (method === undefined || method === null) return undefined;
    if (typeof method !== "function") {
      throw new TypeErrorCtor(`${shown(method)} is not a function`);
    }
    return method;
  }

  function put(target: object, index: number, value: unknown): void {
    defineProperty(target, `${index}`, {
      value,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }

  async function close(iterator: object): Promise<void> {
    try {
      const ret = (iterator as { return?: unknown }).return;
      if (typeof ret === "function") await apply(ret, iterator, []);
    } catch {
      // The first error is the one that surfaces.
    }
  }

  return {
    async fromAsync(
      this: unknown,
      items: unknown,
      ...rest: unknown[]
    ): Promise<unknown[]> {
      const [mapfn, thisArg] = rest;
      if (mapfn !== undefined && typeof mapfn !== "function") {
        throw new TypeErrorCtor(`${shown(mapfn)} is not a function`);
      }
      const map = mapfn as ((value: unknown, index: number) => unknown);
      if (items === undefined || items === null) {
        throw new TypeErrorCtor(
          `Cannot read properties of ${items} (reading 'Symbol(Symbol.asyncIterator)')`,
        );
      }
      const asyncMethod = methodOf(items, asyncIteratorKey);
      const syncMethod = asyncMethod === undefined
        ? methodOf(items, iteratorKey)
        : undefined;
      if (asyncMethod !== undefined || syncMethod !== undefined) {
        const out = isConstructor(this)
          ? new (this as new () => unknown[])()
          : [] as unknown[];
        const iterator = apply(
          (asyncMethod ?? syncMethod) as () => unknown,
          items,
          [],
        );
        if (typeof iterator !== "object" || iterator === null) {
          throw new TypeErrorCtor(
            `Result of the Symbol.${
              asyncMethod === undefined ? "iterator" : "asyncIterator"
            } method is not an object`,
          );
        }
        const next = (iterator as { next: unknown }).next;
        for (let k = 0;; k++) {
          const result = await apply(next as () => unknown, iterator, []);
          if (typeof result !== "object" || result === null) {
            throw new TypeErrorCtor(
              `Iterator result ${shown(result)} is not an object`,
            );
          }
          if ((result as { done?: unknown }).done) {
            (out as { length: number }).length = k;
            return out;
          }
          let value = (result as { value?: unknown }).value;
          if (asyncMethod === undefined) {
            try {
              value = await value;
            } catch (error) {
              // V8 closes the iterator twice here.
              await close(iterator);
              await close(iterator);
              throw error;
            }
          }
          try {
            if (map !== undefined) {
              value = await apply(map, thisArg, [value, k]);
            }
            put(out, k, value);
          } catch (error) {
            await close(iterator);
            throw error;
          }
        }
      }
      const arrayLike = items as { length?: unknown; [key: number]: unknown };
      const size = +(arrayLike.length as number);
      const length = size > 0
        ? (size < 9007199254740991 ? size - (size % 1) : 9007199254740991)
        : 0;
      const out = isConstructor(this)
        ? new (this as new (length: number) => unknown[])(length)
        : new ArrayCtor(length);
      for (let k = 0; k < length; k++) {
        let value = await arrayLike[k];
        if (map !== undefined) value = await apply(map, thisArg, [value, k]);
        put(out, k, value);
      }
      (out as { length: number }).length = length;
      return out;
    },
  }.fromAsync;
}

/**
 * Makes V8's `Error.captureStackTrace(target, constructorOpt?)`: it gives
 * `target` an own, configurable, non-enumerable `stack` accessor, as V8 does,
 * whose text is V8's header (`name: message`, read when `stack` is first
 * read) over the realm's own frames from QuickJS: the caller's first, at
 * most `Error.stackTraceLimit` (V8's default is ten; a value that is not a
 * number gives no stack, as in V8), and when `constructorOpt` is a
 * function, only the frames below its topmost call (found by name; none
 * when it is not on the stack). Self-contained.
 *
 * @returns The function, of length 2.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createCaptureStackTrace } from "./es_builtins.ts";
 *
 * const captureStackTrace = createCaptureStackTrace();
 * const target = { name: "Oops", message: "it broke" };
 * captureStackTrace(target);
 * assert.match((target as { stack?: string }).stack!, /^Oops: it broke\n/);
 * ```
 */
export function createCaptureStackTrace(): (
  target: object,
  constructorOpt?: unknown,
) => void {
  "use strict";
  const { defineProperty, freeze, getOwnPropertyDescriptor, isExtensible } =
    Object;
  const { apply } = Reflect;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const WeakMapCtor = WeakMap;
  const toText = String;
  const split = String.prototype.split;
  const join = Array.prototype.join;
  const traces = new WeakMapCtor<
    object,
    { frames: string[]; done: boolean; value: unknown }
  >();

  function header(target: Record<string, unknown>): string {
    try {
      const message = target.message;
      const text = message === undefined ? "" : toText(message);
      const name = target.name;
      const title = name === undefined ? "Error" : toText(name);
      return title === "" ? text : text === "" ? title : `${title}: ${text}`;
    } catch {
      return "Error";
    }
  }
  const accessors = {
    get(this: Record<string, unknown>): unknown {
      const trace = traces.get(this);
      if (trace === undefined) return undefined;
      if (!trace.done) {
        trace.value = apply(join, [header(this), ...trace.frames], ["\n"]);
        trace.done = true;
      }
      return trace.value;
    },
    set(this: object, value: unknown): void {
      const trace = traces.get(this);
      if (trace !== undefined) {
        trace.value = value;
        trace.done = true;
      }
    },
  };
  for (const accessor of [accessors.get, accessors.set]) {
    defineProperty(accessor, "name", { value: "" });
    freeze(accessor);
  }

  return {
    captureStackTrace(target: object, constructorOpt?: unknown): void {
      if (
        (typeof target !== "object" && typeof target !== "function") ||
        target === null
      ) {
        throw new TypeErrorCtor("invalid_argument");
      }
      const stack = new ErrorCtor().stack;
      let frames = typeof stack === "string"
        ? apply(split, stack, ["\n"]) as string[]
        : [];
      // Its own frame first, and the empty text after the last newline.
      frames = frames.slice(1).filter((line) => line !== "");
      if (typeof constructorOpt === "function") {
        const name = constructorOpt.name || "<anonymous>";
        const at = frames.findIndex((line) =>
          line.startsWith(`    at ${name} (`) ||
          line.startsWith(`    at new ${name} (`) || line === `    at ${name}`
        );
        frames = at < 0 ? [] : frames.slice(at + 1);
      }
      const own = getOwnPropertyDescriptor(target, "stack");
      if (own === undefined && !isExtensible(target)) {
        throw new TypeErrorCtor(
          "Cannot define property stack, object is not extensible",
        );
      }
      if (own !== undefined && !own.configurable) {
        throw new TypeErrorCtor("Cannot redefine property: stack");
      }
      defineProperty(target, "stack", {
        get: accessors.get,
        set: accessors.set,
        enumerable: false,
        configurable: true,
      });
      // Read at each call, as V8 does: code lowers it around the errors
      // it makes (joi sets 0 and restores it).
      const limit: unknown = (ErrorCtor as { stackTraceLimit?: unknown })
        .stackTraceLimit;
      traces.set(
        target,
        typeof limit === "number"
          ? {
            frames: frames.slice(0, limit > 0 ? limit : 0),
            done: false,
            value: undefined,
          }
          : { frames: [], done: true, value: undefined },
      );
    },
  }.captureStackTrace;
}

/**
 * Makes the `SharedArrayBuffer.prototype.grow` every realm gets: one that
 * throws a `TypeError`. QuickJS's own grow raises the buffer's length up
 * to its `maxByteLength` but keeps the memory it first allocated, so a view
 * on a grown buffer reads and writes the engine's whole memory: its own
 * state, and what an earlier run left above the heap the loader restores
 * (another caller's context and values). Without `Atomics` a shared buffer
 * is of no use to code in a realm beyond an `ArrayBuffer`'s, and one of
 * the length needed does everything a grown one would. Self-contained.
 *
 * @returns The function, named `grow`, of length 1.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createRefusedGrow } from "./es_builtins.ts";
 *
 * const grow = createRefusedGrow();
 * assert.throws(() => grow(8), TypeError);
 * ```
 */
export function createRefusedGrow(): (newLength: unknown) => never {
  "use strict";
  const TypeErrorCtor = TypeError;
  return {
    grow(_newLength: unknown): never {
      throw new TypeErrorCtor(
        "Cannot grow a SharedArrayBuffer in a sandbox: the engine would not give it the memory; make a new SharedArrayBuffer (or ArrayBuffer) of the length you need",
      );
    },
  }.grow;
}

/**
 * Makes the typed arrays' `with(index, value)` every realm gets, over the
 * engine's own, as the standard orders it: the array's length is taken
 * first, then `index` and `value` are converted (code of the caller may run
 * and shrink the buffer), and the engine's `with` is handed primitives, so
 * no code of the caller runs inside it; a copy shorter than the length
 * taken first is widened to it, its new elements read as `undefined` (0,
 * `NaN` in a float array, a `TypeError` in a BigInt array). QuickJS's own
 * converted `value` after it took the length and still copied that length
 * from the shrunk buffer: the copy held the engine's memory past the buffer
 * (freed strings, other objects). A copy longer than that length (a
 * length-tracking view whose buffer grew) is cut to it. Another `this` goes to the engine's
 * `with` as it is, which refuses it. Self-contained.
 *
 * @param original The engine's `%TypedArray%.prototype.with`.
 * @param constructors The realm's typed array constructors, its own.
 * @returns The function, named `with`, of length 2.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createTypedArrayWith } from "./es_builtins.ts";
 *
 * const { with: original } = Object.getPrototypeOf(Uint8Array.prototype);
 * const withAt = createTypedArrayWith(original, [Uint8Array]);
 * const copy = withAt.call(new Uint8Array(3), -1, 300) as Uint8Array;
 * assert.deepEqual([...copy], [0, 0, 44]);
 * ```
 */
export function createTypedArrayWith(
  original: (this: unknown, index: number, value: unknown) => unknown,
  constructors: readonly unknown[],
): (index: unknown, value: unknown) => unknown {
  "use strict";
  const { apply } = Reflect;
  const { create, getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const { trunc } = Math;
  const TypeErrorCtor = TypeError;
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype);
  const tagOf = getOwnPropertyDescriptor(typedArrayProto, Symbol.toStringTag)!
    .get!;
  const lengthOf = getOwnPropertyDescriptor(typedArrayProto, "length")!.get!;
  const setFrom = typedArrayProto.set as (source: unknown) => void;
  type Kind = new (length: number) => Record<number, unknown>;
  const kinds = create(null) as Record<string, Kind | undefined>;
  for (const kind of constructors) kinds[(kind as Kind).name] = kind as Kind;
  return {
    with(this: unknown, index: unknown, value: unknown): unknown {
      const tag = apply(tagOf, this, []) as string | undefined;
      const Kind = tag === undefined ? undefined : kinds[tag];
      if (Kind === undefined) return apply(original, this, [index, value]);
      const length = apply(lengthOf, this, []) as number;
      // No index is in range: the engine's own throws what it should, a
      // TypeError first for a detached or out-of-bounds view.
      if (length === 0) return apply(original, this, [index, value]);
      const number = +(index as number);
      const relative = number !== number ? 0 : trunc(number);
      const at = relative >= 0 ? relative : length + relative;
      // An element of the same type converts as the engine's with() would
      // (ToNumber, or ToBigInt for a BigInt array) and stores the same.
      const cell = new Kind(1);
      cell[0] = value;
      // The standard checks the index after the conversion, which may have
      // detached or shrunk the buffer: a RangeError, where the engine's own
      // checks the buffer first and throws a TypeError for a detached one.
      // An index still below zero is out of range too; handed over as it
      // is, the engine would count it from the end a second time. An empty
      // array of the kind throws the RangeError in the engine's words.
      if (at < 0 || at >= (apply(lengthOf, this, []) as number)) {
        apply(original, new Kind(0), [0, cell[0]]);
      }
      const copy = apply(original, this, [at, cell[0]]) as Record<
        number,
        unknown
      >;
      const copied = apply(lengthOf, copy, []) as number;
      if (copied === length) return copy;
      const widened = new Kind(length);
      if (copied > length) {
        // A length-tracking view whose buffer grew: the standard's copy
        // keeps the length taken first.
        for (let i = 0; i < length; i++) widened[i] = copy[i];
        return widened;
      }
      if (tag === "BigInt64Array" || tag === "BigUint64Array") {
        throw new TypeErrorCtor("Cannot convert undefined to a BigInt");
      }
      // Past the copy each element is undefined: NaN in a float array, 0
      // in an integer one.
      if (
        tag === "Float16Array" || tag === "Float32Array" ||
        tag === "Float64Array"
      ) {
        for (let i = copied; i < length; i++) widened[i] = undefined;
      }
      apply(setFrom, widened, [copy]);
      return widened;
    },
  }.with;
}

/**
 * Makes the typed arrays' `sort(comparefn)` every realm gets, over the
 * engine's own, as the standard orders it: with a comparison function it
 * reads the elements into a list, sorts the list (the function sees
 * values, never the array) and writes the list back, so an element past a
 * buffer the function shrank is dropped, as V8 does. QuickJS's own sorted
 * the elements' indices, then copied the elements that were left into a
 * scratch block of their new length and read it at the old indices: a
 * function that shrank the buffer at its last call gave the array bytes
 * past that block (the engine's memory, with what an earlier run left
 * there). Without a function, or with fewer than two elements, or with
 * another `this`, it is the engine's own, which calls no code of the
 * caller then. Self-contained.
 *
 * @param original The engine's `%TypedArray%.prototype.sort`.
 * @param shown How a message shows a value ({@linkcode createValueText}).
 * @returns The function, named `sort`, of length 1.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createTypedArraySort, createValueText } from "./es_builtins.ts";
 *
 * const { sort: original } = Object.getPrototypeOf(Uint8Array.prototype);
 * const sort = createTypedArraySort(original, createValueText());
 * const sorted = sort.call(new Uint8Array([1, 3, 2]), (a: number, b: number) => b - a);
 * assert.deepEqual([...sorted as Uint8Array], [3, 2, 1]);
 * ```
 */
export function createTypedArraySort(
  original: (this: unknown, comparefn?: unknown) => unknown,
  shown: (value: unknown) => string,
): (comparefn?: unknown) => unknown {
  "use strict";
  const { apply } = Reflect;
  const { getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const TypeErrorCtor = TypeError;
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype);
  const tagOf = getOwnPropertyDescriptor(typedArrayProto, Symbol.toStringTag)!
    .get!;
  const lengthOf = getOwnPropertyDescriptor(typedArrayProto, "length")!.get!;
  const arraySort = Array.prototype.sort;
  return {
    sort(this: unknown, comparefn?: unknown): unknown {
      if (comparefn !== undefined && typeof comparefn !== "function") {
        throw new TypeErrorCtor(
          `The comparison function must be either a function or undefined: ${
            shown(comparefn)
          }`,
        );
      }
      if (
        comparefn === undefined || apply(tagOf, this, []) === undefined
      ) {
        return apply(original, this, [comparefn]);
      }
      const view = this as Record<number, unknown>;
      // Zero for a detached or out-of-bounds view, which the engine's own
      // refuses before it calls the function.
      const length = apply(lengthOf, view, []) as number;
      if (length < 2) return apply(original, view, [comparefn]);
      const values: unknown[] = [];
      for (let k = 0; k < length; k++) values[k] = view[k];
      apply(arraySort, values, [comparefn]);
      // A write past a shrunk buffer does nothing.
      for (let k = 0; k < length; k++) view[k] = values[k];
      return view;
    },
  }.sort;
}

/**
 * Makes the constructor a realm gets in place of one of the engine's typed
 * array constructors: a proxy of it (the same prototype, statics, name and
 * length) whose `new` reads `new.target`'s `prototype` first, as the
 * standard orders it, and hands the engine a `new.target` whose
 * `prototype` is a plain value, so no code of the caller runs inside the
 * engine's constructor. QuickJS's own read that `prototype` last, after it
 * took the buffer's length (or a source array's): a `new.target` whose
 * `prototype` is a getter (a proxy, in `Reflect.construct` or as a class
 * made with `new`) could shrink or detach the buffer first, and the new
 * array then spanned memory past it (from address zero, for a detached
 * buffer: the engine's whole memory, to read and write). Self-contained.
 *
 * @param original One of the engine's typed array constructors.
 * @returns Its proxy.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createTypedArrayConstructor } from "./es_builtins.ts";
 *
 * const Bytes = createTypedArrayConstructor(Uint8Array);
 * assert.deepEqual([...new Bytes([1, 2])], [1, 2]);
 * assert.equal(Bytes.prototype, Uint8Array.prototype);
 * ```
 */
export function createTypedArrayConstructor<
  C extends new (...args: never[]) => object,
>(original: C): C {
  "use strict";
  const { construct } = Reflect;
  const { defineProperty } = Object;
  const ProxyCtor = Proxy;
  const WeakMapCtor = WeakMap;
  // One stand-in per prototype, its `prototype` a data property.
  const standIns = new WeakMapCtor<object, () => void>();
  function standInFor(newTarget: { prototype?: unknown }): unknown {
    const proto = newTarget.prototype;
    if (
      (typeof proto !== "object" && typeof proto !== "function") ||
      proto === null
    ) {
      return original;
    }
    let standIn = standIns.get(proto);
    if (standIn === undefined) {
      standIn = function () {};
      defineProperty(standIn, "prototype", { value: proto });
      standIns.set(proto, standIn);
    }
    return standIn;
  }
  const proxy: C = new ProxyCtor(original, {
    construct(target: C, args: unknown[], newTarget: unknown): object {
      const first = args[0];
      // A length (no object) makes a buffer no code of the caller sees.
      const plain = newTarget === proxy ||
        ((typeof first !== "object" && typeof first !== "function") ||
          first === null);
      return construct(
        target,
        args,
        newTarget === proxy
          ? target
          : plain
          ? newTarget as C
          : standInFor(newTarget as { prototype?: unknown }) as C,
      );
    },
  });
  return proxy;
}

/**
 * Makes the `BigInt.asUintN(bits, bigint)` every realm gets, over the
 * engine's `BigInt.asIntN`: `bits` is converted to an index (a
 * `RangeError` below zero or past 2 ** 53 - 1), `bigint` by the engine's
 * `asIntN`, and a negative result of that is raised by 2 ** bits, so the
 * answer is `bigint` modulo 2 ** bits, as the standard says. QuickJS's own
 * asUintN kept the top bit of its result as the sign: a value whose bit
 * `bits - 1` was set came back negative (`asUintN(64, -1n)` was `-1n`, where
 * it is 2 ** 64 - 1), and a negative value as wide as `bits` or wider came
 * back unchanged. A negative value with more bits than the engine's
 * largest BigInt (about a million) is refused with the engine's
 * `RangeError`, as V8 refuses one of more than a billion. Self-contained.
 *
 * @param asIntN The engine's `BigInt.asIntN`.
 * @returns The function, named `asUintN`, of length 2.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createBigIntAsUintN } from "./es_builtins.ts";
 *
 * const asUintN = createBigIntAsUintN(BigInt.asIntN);
 * assert.equal(asUintN(64, -1n), 2n ** 64n - 1n);
 * assert.equal(asUintN(8, 257n), 1n);
 * ```
 */
export function createBigIntAsUintN(
  asIntN: (bits: number, bigint: bigint) => bigint,
): (bits: unknown, bigint: unknown) => bigint {
  "use strict";
  const { apply } = Reflect;
  const { trunc } = Math;
  const BigIntCtor = BigInt;
  const RangeErrorCtor = RangeError;
  const MAX_SAFE = 9007199254740991;
  return {
    asUintN(bits: unknown, bigint: unknown): bigint {
      // ToIndex: a BigInt or a symbol throws a TypeError here.
      const number = +(bits as number);
      const index = number !== number ? 0 : trunc(number);
      if (index < 0 || index > MAX_SAFE) {
        throw new RangeErrorCtor(
          "Invalid value: not (convertible to) a safe integer",
        );
      }
      const signed = apply(asIntN, BigIntCtor, [index, bigint]) as bigint;
      return signed < 0n ? signed + (1n << BigIntCtor(index)) : signed;
    },
  }.asUintN;
}

/** The iterator helpers' `return` and the methods that make helpers. */
export interface IteratorHelperReturn {
  /** `%IteratorHelperPrototype%.return()`. */
  return: () => unknown;
  /**
   * Wraps one of `Iterator.prototype`'s `map`, `filter`, `take`, `drop` and
   * `flatMap`, so the helpers it makes are known with the iterator they
   * read.
   */
  recording: <F extends (...args: never[]) => unknown>(method: F) => F;
}

/**
 * Makes the iterator helpers' `return()` every realm gets, over the
 * engine's own, and the wrappers of the methods that make helpers
 * (`map`, `filter`, `take`, `drop`, `flatMap`), which note the iterator
 * each helper reads. The standard closes that iterator by calling its
 * `return` method when it has one, and answers `{ value: undefined, done:
 * true }`. QuickJS's own called the method without looking, so a helper
 * over an iterator without one (an array's, a `Set`'s, a `Map`'s, a
 * string's, most hand-written ones) threw `TypeError: not a function`, and
 * with it `for...of` with `break` and `const [first] = ...` over it; and
 * it answered what the iterator's `return` answered. Here the helper,
 * which the engine's own has ended, answers the standard's result, also
 * where the engine's threw that error for an iterator without a `return`
 * method. One case differs from V8: a `flatMap` helper whose current inner
 * iterator has a `return` that is no function, over an iterator without
 * one, answers where V8 throws a `TypeError`. Self-contained.
 *
 * @param original The engine's `%IteratorHelperPrototype%.return`.
 * @returns The `return` method, named `return`, of length 0, and the
 * wrapper of the methods that make helpers.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createIteratorHelperReturn } from "./es_builtins.ts";
 *
 * const helperProto = Object.getPrototypeOf([].values().map((x) => x));
 * const { recording } = createIteratorHelperReturn(helperProto.return);
 * const map = recording(Iterator.prototype.map);
 * assert.deepEqual([...map.call([1, 2].values(), (x: number) => x * 2)], [2, 4]);
 * ```
 */
export function createIteratorHelperReturn(
  original: (this: unknown) => unknown,
): IteratorHelperReturn {
  "use strict";
  const { apply } = Reflect;
  const { defineProperty } = Object;
  const TypeErrorCtor = TypeError;
  const WeakMapCtor = WeakMap;
  // Each helper made here, and the iterator it reads.
  const sources = new WeakMapCtor<object, object>();
  function hasNoReturn(helper: unknown): boolean {
    if (typeof helper !== "object" || helper === null) return false;
    const source = sources.get(helper);
    if (source === undefined) return false;
    const method = (source as { return?: unknown }).return;
    return method === undefined || method === null;
  }
  return {
    return: {
      return(this: unknown): unknown {
        try {
          // The engine's answers what the iterator's return() did.
          apply(original, this, []);
        } catch (error) {
          // The engine's words for calling an undefined method.
          if (
            !(error instanceof TypeErrorCtor) ||
            error.message !== "not a function" || !hasNoReturn(this)
          ) {
            throw error;
          }
        }
        return { value: undefined, done: true };
      },
    }.return,
    recording<F extends (...args: never[]) => unknown>(method: F): F {
      const made = {
        // Each of them takes one argument.
        [method.name](this: unknown, argument: unknown): unknown {
          const helper = apply(method, this, [argument]) as object;
          sources.set(helper, this as object);
          return helper;
        },
      }[method.name]!;
      defineProperty(made, "length", { value: method.length });
      return made as unknown as F;
    },
  };
}

/** The four copying methods of `Array.prototype`, by name. */
export interface ArrayCopies {
  /** `Array.prototype.toReversed()`. */
  toReversed: () => unknown[];
  /** `Array.prototype.toSorted(comparefn)`. */
  toSorted: (comparefn?: unknown) => unknown[];
  /** `Array.prototype.toSpliced(start, skipCount, ...items)`. */
  toSpliced: (start?: unknown, skipCount?: unknown) => unknown[];
  /** `Array.prototype.with(index, value)`. */
  with: (index: unknown, value: unknown) => unknown[];
}

/**
 * Makes the `Array.prototype` methods that copy an array (`toReversed`,
 * `toSorted`, `toSpliced`, `with`) every realm gets, written after the
 * standard: they read the length and convert their arguments, then read
 * each element in the standard's order into a new array they fill as they
 * go. QuickJS's own made the new array first, its length set and its
 * elements not written, and then read the elements; an element the
 * engine had to ask for (a getter, a proxy, an array-like) ran the
 * caller's code, and a garbage collection then took the unwritten
 * elements (what freed memory held) for values and ended the engine
 * (SANDBOX_CRASHED). A length past 2 ** 31 - 1 is refused with a
 * `RangeError` before any element is read, as QuickJS's own did.
 * Self-contained.
 *
 * @param shown How a message shows a value ({@linkcode createValueText}).
 * @returns The four methods, with the standard's names and lengths.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createArrayCopies, createValueText } from "./es_builtins.ts";
 *
 * const copies = createArrayCopies(createValueText());
 * assert.deepEqual(copies.toReversed.call([1, 2, 3]), [3, 2, 1]);
 * assert.deepEqual(copies.with.call({ length: 2, 0: "a" }, 1, "b"), ["a", "b"]);
 * ```
 */
export function createArrayCopies(
  shown: (value: unknown) => string,
): ArrayCopies {
  "use strict";
  const { apply } = Reflect;
  const { trunc } = Math;
  const ObjectCtor = Object;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const sort = Array.prototype.sort;
  // QuickJS makes no array longer; the standard's limit is 2 ** 32 - 1.
  const MAX_LENGTH = 2147483647;
  const MAX_SAFE = 9007199254740991;

  function toObject(value: unknown): Record<number, unknown> {
    if (value === undefined || value === null) {
      throw new TypeErrorCtor("Cannot convert undefined or null to object");
    }
    return ObjectCtor(value) as Record<number, unknown>;
  }
  function toInteger(value: unknown): number {
    const number = +(value as number);
    return number !== number ? 0 : trunc(number);
  }
  function lengthOf(object: Record<number, unknown>): number {
    const length = toInteger((object as { length?: unknown }).length);
    return length <= 0 ? 0 : length < MAX_SAFE ? length : MAX_SAFE;
  }
  function checked(length: number): number {
    if (length > MAX_LENGTH) throw new RangeErrorCtor("Invalid array length");
    return length;
  }
  function clamped(relative: number, length: number): number {
    if (relative < 0) return relative + length > 0 ? relative + length : 0;
    return relative < length ? relative : length;
  }
  function copy(object: Record<number, unknown>, length: number): unknown[] {
    const out: unknown[] = [];
    for (let k = 0; k < length; k++) out[k] = object[k];
    return out;
  }

  return {
    toReversed(this: unknown): unknown[] {
      const object = toObject(this);
      const length = checked(lengthOf(object));
      const out: unknown[] = [];
      for (let k = 0; k < length; k++) out[k] = object[length - 1 - k];
      return out;
    },
    toSorted(this: unknown, comparefn?: unknown): unknown[] {
      if (comparefn !== undefined && typeof comparefn !== "function") {
        throw new TypeErrorCtor(
          `The comparison function must be either a function or undefined: ${
            shown(comparefn)
          }`,
        );
      }
      const object = toObject(this);
      const out = copy(object, checked(lengthOf(object)));
      apply(sort, out, [comparefn]);
      return out;
    },
    toSpliced(this: unknown, start?: unknown, skipCount?: unknown): unknown[] {
      const object = toObject(this);
      const length = lengthOf(object);
      const count = arguments.length;
      const from = clamped(toInteger(start), length);
      let skip = 0;
      if (count === 1) skip = length - from;
      else if (count > 1) {
        const relative = toInteger(skipCount);
        skip = relative <= 0
          ? 0
          : relative < length - from
          ? relative
          : length - from;
      }
      const inserted = count > 2 ? count - 2 : 0;
      const newLength = length + inserted - skip;
      if (newLength > MAX_SAFE) {
        throw new TypeErrorCtor("Invalid array length");
      }
      checked(newLength);
      const out: unknown[] = [];
      let i = 0;
      for (; i < from; i++) out[i] = object[i];
      for (let j = 0; j < inserted; j++, i++) out[i] = arguments[j + 2];
      for (let r = from + skip; i < newLength; i++, r++) out[i] = object[r];
      return out;
    },
    with(this: unknown, index: unknown, value: unknown): unknown[] {
      const object = toObject(this);
      const length = lengthOf(object);
      const relative = toInteger(index);
      const at = relative >= 0 ? relative : length + relative;
      if (at >= length || at < 0) {
        throw new RangeErrorCtor(`Invalid index : ${relative}`);
      }
      checked(length);
      const out: unknown[] = [];
      for (let k = 0; k < length; k++) out[k] = k === at ? value : object[k];
      return out;
    },
  };
}

/**
 * Defines each built-in the realm lacks, with the attributes V8 gives it:
 * methods and constructors writable, configurable and not enumerable, the
 * symbols neither. The realm's lockdown then freezes them with every other
 * intrinsic.
 *
 * @param steps The realm's copies of {@linkcode ES_BUILTINS_STEPS}.
 * @param global The realm's global object.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import vm from "node:vm";
 * import { realmSource } from "./realm_source.ts";
 * import { ES_BUILTINS_STEPS, type EsBuiltinsSteps } from "./es_builtins.ts";
 *
 * function entry(steps: EsBuiltinsSteps) {
 *   delete (Uint8Array as { fromHex?: unknown }).fromHex;
 *   steps.installEsBuiltins(steps, globalThis);
 *   return [...Uint8Array.fromHex("00ff")];
 * }
 * const source = realmSource(entry, { ...ES_BUILTINS_STEPS }, null);
 * assert.deepEqual([...vm.runInNewContext(source)()], [0, 255]);
 * ```
 */
export function installEsBuiltins(
  steps: EsBuiltinsSteps,
  global: object,
): void {
  "use strict";
  const { defineProperty, getOwnPropertyNames, getPrototypeOf, hasOwn } =
    Object;
  const SymbolCtor = Symbol;
  const G = global as Record<string, unknown>;
  function define(target: object, key: PropertyKey, value: unknown): void {
    if (hasOwn(target, key)) return;
    defineProperty(target, key, {
      value,
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }
  for (const key of ["dispose", "asyncDispose", "metadata"]) {
    if (!hasOwn(SymbolCtor, key)) {
      defineProperty(SymbolCtor, key, { value: SymbolCtor(`Symbol.${key}`) });
    }
  }
  // The decorator metadata proposal's default, which core-js 3 defines
  // when it is missing (even its pure build, as @babel/runtime-corejs3
  // loads it): on a frozen Function.prototype that definition would throw.
  const metadata = (SymbolCtor as unknown as Record<string, symbol>).metadata!;
  const functionProto = getPrototypeOf(function () {});
  if (!hasOwn(functionProto, metadata)) {
    defineProperty(functionProto, metadata, { value: null });
  }
  const dispose = (SymbolCtor as unknown as Record<string, symbol>).dispose!;
  const asyncDispose = (SymbolCtor as unknown as Record<string, symbol>)
    .asyncDispose!;
  const shown = steps.createValueText();

  const base64 = steps.createBase64Methods(shown);
  for (const key of ["fromBase64", "fromHex"] as const) {
    define(Uint8Array, key, base64[key]);
  }
  for (
    const key of ["toBase64", "setFromBase64", "toHex", "setFromHex"] as const
  ) {
    define(Uint8Array.prototype, key, base64[key]);
  }

  // V8 (a node:vm context) maps local time as the standard does, and has
  // its own Error.captureStackTrace; QuickJS has neither.
  const localTimeSound = hasOwn(Error, "captureStackTrace");
  define(Array, "fromAsync", steps.createFromAsync(shown));
  define(Error, "captureStackTrace", steps.createCaptureStackTrace());
  if (!hasOwn(Error, "stackTraceLimit")) {
    // V8's default and attributes. QuickJS's own stacks ignore it; the
    // lockdown keeps it writable, so code that lowers it works.
    defineProperty(Error, "stackTraceLimit", {
      value: 10,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }

  // Replaced even where the engine's own is sound (a node:vm context), so
  // a growable buffer fails alike on every tier.
  const Shared = G.SharedArrayBuffer as { prototype?: object } | undefined;
  if (Shared?.prototype !== undefined && hasOwn(Shared.prototype, "grow")) {
    defineProperty(Shared.prototype, "grow", {
      value: steps.createRefusedGrow(),
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }

  // The realm's own typed array constructors, before they are replaced
  // (below): with() makes its copies with them.
  const typedArrays: [string, new () => object][] = [];
  for (
    const name of [
      "Int8Array",
      "Uint8Array",
      "Uint8ClampedArray",
      "Int16Array",
      "Uint16Array",
      "Int32Array",
      "Uint32Array",
      "Float16Array",
      "Float32Array",
      "Float64Array",
      "BigInt64Array",
      "BigUint64Array",
    ]
  ) {
    const kind = G[name] as (new () => object) | undefined;
    if (typeof kind === "function" && hasOwn(G, name)) {
      typedArrays.push([name, kind]);
    }
  }

  const typedArrayProto = getPrototypeOf(Uint8Array.prototype) as {
    with?: (this: unknown, index: number, value: unknown) => unknown;
    sort?: (this: unknown, comparefn?: unknown) => unknown;
  };
  if (typeof typedArrayProto.sort === "function") {
    defineProperty(typedArrayProto, "sort", {
      value: steps.createTypedArraySort(typedArrayProto.sort, shown),
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }
  if (typeof typedArrayProto.with === "function") {
    defineProperty(typedArrayProto, "with", {
      value: steps.createTypedArrayWith(
        typedArrayProto.with,
        typedArrays.map(([, kind]) => kind),
      ),
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }

  // Replaced in every realm, as asUintN below: V8's own is sound.
  const IteratorCtor = G.Iterator as { prototype?: object } | undefined;
  const iteratorProto = IteratorCtor?.prototype as
    | Record<string, (this: unknown, ...args: unknown[]) => unknown>
    | undefined;
  if (typeof iteratorProto?.map === "function") {
    const helperProto = getPrototypeOf(
      iteratorProto.map.call([][SymbolCtor.iterator](), () => 0),
    ) as { return?: (this: unknown) => unknown };
    if (typeof helperProto.return === "function") {
      const helpers = steps.createIteratorHelperReturn(helperProto.return);
      defineProperty(helperProto, "return", {
        value: helpers.return,
        writable: true,
        enumerable: false,
        configurable: true,
      });
      for (const key of ["map", "filter", "take", "drop", "flatMap"]) {
        if (typeof iteratorProto[key] !== "function") continue;
        defineProperty(iteratorProto, key, {
          value: helpers.recording(iteratorProto[key]),
          writable: true,
          enumerable: false,
          configurable: true,
        });
      }
    }
  }

  // Replaced in every realm: V8's own is sound, and the answers are alike
  // on every tier.
  const BigIntCtor = G.BigInt as
    | { asIntN?: (bits: number, bigint: bigint) => bigint }
    | undefined;
  if (typeof BigIntCtor?.asIntN === "function") {
    defineProperty(BigIntCtor, "asUintN", {
      value: steps.createBigIntAsUintN(BigIntCtor.asIntN),
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }

  // Replaced in every realm, as with() above: the same answers on every
  // tier.
  const copies = steps.createArrayCopies(shown);
  const arrayProto = Array.prototype as unknown as Record<string, unknown>;
  for (
    const key of ["toReversed", "toSorted", "toSpliced", "with"] as const
  ) {
    if (typeof arrayProto[key] !== "function") continue;
    defineProperty(arrayProto, key, {
      value: copies[key],
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }

  for (const [name, original] of typedArrays) {
    const replaced = steps.createTypedArrayConstructor(original);
    defineProperty(original.prototype, "constructor", {
      value: replaced,
      writable: true,
      enumerable: false,
      configurable: true,
    });
    defineProperty(G, name, {
      value: replaced,
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }

  // QuickJS maps a local date and time an hour off after a daylight-saving
  // change: its constructor, Date.parse and local setters are replaced.
  if (!localTimeSound) {
    const local = steps.createLocalTime(G.Date as DateConstructor);
    const methods = (G.Date as DateConstructor).prototype;
    const replace = (target: object, key: string, value: unknown): void => {
      defineProperty(target, key, {
        value,
        writable: true,
        enumerable: false,
        configurable: true,
      });
    };
    replace(G.Date as object, "parse", local.parse);
    for (const key of getOwnPropertyNames(local.setters)) {
      replace(methods, key, local.setters[key]);
    }
    replace(methods, "constructor", local.Date);
    replace(G, "Date", local.Date);
  }

  const disposal = steps.createDisposal(dispose, asyncDispose, shown);
  for (
    const key of [
      "SuppressedError",
      "DisposableStack",
      "AsyncDisposableStack",
    ] as const
  ) {
    define(G, key, disposal[key]);
  }
  define(
    getPrototypeOf(getPrototypeOf([][SymbolCtor.iterator]())),
    dispose,
    disposal.iteratorDispose,
  );
  define(
    getPrototypeOf(getPrototypeOf(async function* () {}.prototype)),
    asyncDispose,
    disposal.asyncIteratorDispose,
  );
}

/** The ES built-ins' realm functions, for a realm's library. */
export const ES_BUILTINS_STEPS: EsBuiltinsSteps = Object.freeze({
  createValueText,
  createBase64Methods,
  createDisposal,
  createLocalTime,
  createFromAsync,
  createCaptureStackTrace,
  createRefusedGrow,
  createTypedArrayWith,
  createArrayCopies,
  createTypedArraySort,
  createTypedArrayConstructor,
  createBigIntAsUintN,
  createIteratorHelperReturn,
  installEsBuiltins,
});
